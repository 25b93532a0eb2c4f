package gotenberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// markFields are the file fields of stamps and watermarks: a mark's file
// is found by its field, never among the documents and assets.
var markFields = map[string]bool{"stamp": true, "watermark": true}

// readMarks reads the stamps ("stamp") or watermarks ("watermark") of a
// form as Gotenberg does: one per {kind}Source value, the repeated
// {kind}Expression, {kind}Pages and {kind}Options fields aligned with it
// by position, and an image or PDF mark taking the next file of the
// {kind} field. Every invalid field is in f's errors.
func readMarks(f *form, kind string) []engine.Mark {
	sources := f.list(kind + "Source")
	exprs, pages, options := f.list(kind+"Expression"), f.list(kind+"Pages"), f.list(kind+"Options")
	if len(sources) > engine.MaxMarks {
		f.invalid(kind+"Source", fmt.Sprint(len(sources), " values"), fmt.Errorf("at most %d %ss", engine.MaxMarks, kind))
		return nil
	}
	at := func(values []string, i int) string {
		if i < len(values) {
			return values[i]
		}
		return ""
	}
	f.mark(kind) // the file field
	files, before := f.marks[kind], len(f.errs)
	marks := make([]engine.Mark, 0, len(sources))
	missing := false
	for i, src := range sources {
		m := engine.Mark{Source: src, Pages: at(pages, i)}
		switch src {
		case engine.SourceText:
			m.Text = at(exprs, i)
		case engine.SourceImage, engine.SourcePDF:
			if len(files) == 0 {
				missing = true
				continue
			}
			m.File, files = files[0].data, files[1:]
		default:
			f.invalid(kind+"Source", src, errors.New("wrong value, expected either 'text', 'image' or 'pdf'"))
			continue
		}
		if raw := at(options, i); raw != "" {
			if err := json.Unmarshal([]byte(raw), &m.Options); err != nil {
				f.invalid(kind+"Options", raw, fmt.Errorf("unmarshal %sOptions: %w", kind, err))
				continue
			}
		}
		marks = append(marks, m)
	}
	if missing {
		// Gotenberg's words; the expression is never a file's path.
		f.errs = append(f.errs, fmt.Sprintf("a %s file is required for image or pdf source", kind))
	}
	if len(f.errs) == before {
		checkMarks(f, kind, marks, sources, exprs, pages, options)
	}
	return marks
}

// checkMarks names the field of the first mark pdfcpu cannot draw.
func checkMarks(f *form, kind string, marks []engine.Mark, values ...[]string) {
	var me *engine.MarkError
	if err := engine.CheckMarks(marks, kind == "stamp"); !errors.As(err, &me) {
		if err != nil {
			f.errs = append(f.errs, err.Error())
		}
		return
	}
	field, got := "", ""
	pick := func(name string, vs []string) {
		field = kind + name
		if me.Index < len(vs) {
			got = vs[me.Index]
		}
	}
	switch me.Part {
	case engine.PartText:
		pick("Expression", values[1])
	case engine.PartPages:
		pick("Pages", values[2])
	case engine.PartOptions:
		pick("Options", values[3])
	case engine.PartFile:
		f.errs = append(f.errs, fmt.Sprintf("form file '%s' is invalid (%v)", kind, me.Err))
		return
	default:
		pick("Source", values[0])
	}
	f.invalid(field, got, me.Err)
}

// markStep is the watermark or stamp step of a conversion, if its
// fields ask for one.
func markStep(f *form, kind string) (postStep, bool) {
	marks := readMarks(f, kind)
	if len(marks) == 0 {
		return postStep{}, false
	}
	order, op := stepWatermark, func(ctx context.Context, data []byte) ([]byte, error) {
		return engine.Watermark(ctx, data, engine.WatermarkOptions{Marks: marks})
	}
	if kind == "stamp" {
		order, op = stepStamp, func(ctx context.Context, data []byte) ([]byte, error) {
			return engine.Stamp(ctx, data, engine.StampOptions{Marks: marks})
		}
	}
	return postStep{order: order, run: func(ctx context.Context, files []upload) ([]upload, error) {
		return eachPDF(files, func(data []byte) ([]byte, error) { return op(ctx, data) })
	}}, true
}

// marksRoute is POST /forms/pdfengines/stamp or /watermark: the marks
// drawn on every PDF.
func marksRoute(kind string) engineRoute {
	return func(f *form) engineJob {
		step, ok := markStep(f, kind)
		return func(ctx context.Context, f *form, pdfs []upload) ([]upload, error) {
			if !ok {
				return nil, badRequest("Invalid form data: form field '%sSource' is required", kind)
			}
			return step.run(ctx, pdfs)
		}
	}
}
