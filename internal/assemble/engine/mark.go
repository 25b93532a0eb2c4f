package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // the image marks pdfcpu draws
	_ "image/png"
	"maps"
	"slices"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// A mark's source, as Gotenberg names them.
const (
	SourceText  = "text"
	SourceImage = "image"
	SourcePDF   = "pdf"
)

// MaxMarks bounds the marks of one operation: each is a pass over the
// whole document.
const MaxMarks = 16

// Mark is one stamp or watermark: a text, an image or the pages of a PDF,
// drawn on the selected pages with pdfcpu's description parameters.
type Mark struct {
	Source string
	// Text is a text mark's text.
	Text string
	// Literal draws Text as typed (literal.go); without it pdfcpu formats
	// %p, %P, %t and %v in it and breaks lines at \n, as Gotenberg's
	// stamps and watermarks do.
	Literal bool
	// File is an image mark's image (PNG, JPEG, TIFF, WebP) or a PDF
	// mark's PDF, whose pages are drawn on the document's in order.
	File []byte
	// Pages is a pdfcpu page selection ("1-2", "odd", "!3"); empty is every page.
	Pages string
	// Options are pdfcpu's description parameters (scale, rotation,
	// opacity, position, offset, fillcolor, fontname, points, ...).
	Options map[string]string
}

// Part names the part of a Mark a MarkError is about.
type Part string

const (
	PartSource  Part = "source"
	PartText    Part = "text"
	PartFile    Part = "file"
	PartPages   Part = "pages"
	PartOptions Part = "options"
)

// MarkError is a Mark that cannot be drawn: Index is its place in the
// list, Part the part that is wrong. It comes wrapped in an *InputError.
type MarkError struct {
	Index int
	Part  Part
	Err   error
}

func (e *MarkError) Error() string {
	return fmt.Sprintf("mark %d: %s: %v", e.Index+1, e.Part, e.Err)
}

func (e *MarkError) Unwrap() error { return e.Err }

// CheckMarks reports the first mark that cannot be drawn, before any
// document is read: a caller checks a form's marks before it renders.
func CheckMarks(marks []Mark, onTop bool) error {
	if len(marks) > MaxMarks {
		return &InputError{Err: fmt.Errorf("%d marks, at most %d", len(marks), MaxMarks)}
	}
	for i, m := range marks {
		if _, err := m.watermark(onTop); err != nil {
			return markErr(err, i)
		}
	}
	return nil
}

// markErr is a Mark's error at index i, as the caller's.
func markErr(err error, i int) error {
	var me *MarkError
	if errors.As(err, &me) {
		me.Index = i
	}
	return &InputError{Err: err}
}

// applyMarks draws marks on pdf one after another, on top of its content
// (stamps) or beneath it (watermarks), in one read and one write.
func applyMarks(ctx context.Context, pdf []byte, marks []Mark, onTop bool) ([]byte, error) {
	conf := Conf()
	conf.Cmd = model.ADDWATERMARKS
	conf.OptimizeDuplicateContentStreams = false
	d, err := ReadDocument(ctx, bytes.NewReader(pdf), conf)
	if err != nil {
		return nil, err
	}
	if err := d.AddMarks(ctx, marks, onTop); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := d.Write(&out, false); err != nil {
		return nil, &InputError{Err: err}
	}
	return out.Bytes(), nil
}

// watermark is m as pdfcpu's configuration; its errors are *MarkError.
func (m Mark) watermark(onTop bool) (*model.Watermark, error) {
	desc, err := description(m.Options)
	if err != nil {
		return nil, &MarkError{Part: PartOptions, Err: err}
	}
	if m.Pages != "" {
		if _, err := api.ParsePageSelection(m.Pages); err != nil {
			return nil, &MarkError{Part: PartPages, Err: err}
		}
	}
	var wm *model.Watermark
	switch m.Source {
	case SourceText:
		if strings.TrimSpace(m.Text) == "" {
			return nil, &MarkError{Part: PartText, Err: errors.New("a text mark needs its text")}
		}
		text := m.Text
		if m.Literal {
			text, _ = literalText(text)
		}
		wm, err = api.TextWatermark(text, desc, onTop, false, types.POINTS)
	case SourceImage:
		if _, _, ierr := image.DecodeConfig(bytes.NewReader(m.File)); ierr != nil {
			return nil, &MarkError{Part: PartFile, Err: fmt.Errorf("not an image pdfcpu draws (PNG, JPEG, TIFF, WebP): %w", ierr)}
		}
		wm, err = api.ImageWatermarkForReader(bytes.NewReader(m.File), desc, onTop, false, types.POINTS)
	case SourcePDF:
		if verr := api.Validate(bytes.NewReader(m.File), Conf()); verr != nil {
			return nil, &MarkError{Part: PartFile, Err: fmt.Errorf("not a readable PDF: %w", verr)}
		}
		wm, err = api.PDFWatermarkForReadSeeker(bytes.NewReader(m.File), 0, desc, onTop, false, types.POINTS)
	default:
		return nil, &MarkError{Part: PartSource, Err: fmt.Errorf("'%s' is not text, image or pdf", m.Source)}
	}
	if err != nil {
		return nil, &MarkError{Part: PartOptions, Err: err}
	}
	return wm, nil
}

// description is options as pdfcpu's description string ("k:v, k:v"),
// in key order so that one set of options is always one description.
func description(options map[string]string) (string, error) {
	parts := make([]string, 0, len(options))
	for _, k := range slices.Sorted(maps.Keys(options)) {
		v := options[k]
		if strings.ContainsAny(k, ":,") || strings.ContainsAny(v, ":,") || strings.TrimSpace(k) == "" {
			return "", fmt.Errorf("the option '%s' holds ':' or ',', which pdfcpu's descriptions cannot", k)
		}
		parts = append(parts, k+":"+v)
	}
	return strings.Join(parts, ", "), nil
}
