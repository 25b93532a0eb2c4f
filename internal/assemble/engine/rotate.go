package engine

import (
	"context"
	"fmt"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
)

// RotateOptions configure Rotate.
type RotateOptions struct {
	Angle int // clockwise: 90, 180 or 270
	// Pages are the pages to turn (SplitOptions.Span's selection
	// syntax); empty: every page. A selection of pages the document does
	// not have turns none: after a split, a part may hold none of them.
	Pages string
}

// Rotate turns the pages of pdf clockwise, adding to any rotation they
// already have.
func Rotate(ctx context.Context, pdf []byte, opts RotateOptions) ([]byte, error) {
	switch opts.Angle {
	case 90, 180, 270:
	default:
		return nil, &InputError{Err: fmt.Errorf("the angle %d is not 90, 180 or 270", opts.Angle)}
	}
	var sel []string
	if opts.Pages != "" {
		var err error
		if sel, err = parseSelection(opts.Pages); err != nil {
			return nil, &InputError{Err: err}
		}
	}
	src, err := readPDF(pdf)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pages, err := api.PagesForPageSelection(src.PageCount, sel, true, false)
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("%w: %v", ErrPageSelection, err)}
	}
	for p := range pages {
		if p < 1 || p > src.PageCount {
			delete(pages, p)
		}
	}
	if err := pdfcpu.RotatePages(src, pages, opts.Angle); err != nil {
		return nil, &InputError{Err: err}
	}
	return writePDF(src)
}
