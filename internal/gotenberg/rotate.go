package gotenberg

import (
	"context"
	"errors"
	"strconv"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// readRotate reads rotateAngle (90, 180 or 270) and rotatePages (a page
// selection; empty: every page); ok is false when no rotation is asked
// for or a field is invalid (in f's errors).
func readRotate(f *form, required bool) (opts engine.RotateOptions, ok bool) {
	v := f.value("rotateAngle")
	opts.Pages = f.value("rotatePages")
	if v == "" {
		if required {
			f.errs = append(f.errs, "form field 'rotateAngle' is required")
		}
		return opts, false
	}
	angle, err := strconv.Atoi(v)
	if err == nil && angle != 90 && angle != 180 && angle != 270 {
		err = errors.New("wrong value, expected 90, 180, or 270")
	}
	if err != nil {
		f.invalid("rotateAngle", v, err)
		return opts, false
	}
	if opts.Pages != "" {
		if err := engine.CheckPageSelection(opts.Pages); err != nil {
			f.invalid("rotatePages", opts.Pages, err)
			return opts, false
		}
	}
	opts.Angle = angle
	return opts, true
}

// rotateStep turns the pages of every PDF.
func rotateStep(f *form) (postStep, bool) {
	opts, ok := readRotate(f, false)
	if !ok {
		return postStep{}, false
	}
	return postStep{order: stepRotate, run: func(ctx context.Context, files []upload) ([]upload, error) {
		return perFile(ctx, files, func(ctx context.Context, data []byte) ([]byte, error) { return engine.Rotate(ctx, data, opts) })
	}}, true
}

// rotateRoute is POST /forms/pdfengines/rotate.
func rotateRoute(f *form) engineJob {
	opts, ok := readRotate(f, true)
	return func(ctx context.Context, f *form, pdfs []upload) ([]upload, error) {
		if !ok {
			return nil, f.err()
		}
		return perFile(ctx, pdfs, func(ctx context.Context, data []byte) ([]byte, error) { return engine.Rotate(ctx, data, opts) })
	}
}
