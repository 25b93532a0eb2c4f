package gotenberg

import (
	"context"
	"errors"
	"strconv"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// readImageQuality reads imageQuality, 1 to 100 (default 80).
func readImageQuality(f *form) (int, bool) {
	v := f.value("imageQuality")
	if v == "" {
		return engine.DefaultImageQuality, true
	}
	q, err := strconv.Atoi(v)
	switch {
	case err != nil:
	case q < 1:
		err = errors.New("value is inferior to 1")
	case q > 100:
		err = errors.New("value is superior to 100")
	}
	if err != nil {
		f.invalid("imageQuality", v, err)
		return 0, false
	}
	return q, true
}

// optimizeStep re-encodes the large lossless images of every PDF as
// JPEG, when optimizeImages is true.
func optimizeStep(f *form) (postStep, bool) {
	on := f.bool("optimizeImages", false)
	q, ok := readImageQuality(f)
	if !on || !ok {
		return postStep{}, false
	}
	return postStep{order: stepOptimize, run: optimizeRun(q)}, true
}

func optimizeRun(q int) func(ctx context.Context, files []upload) ([]upload, error) {
	return func(ctx context.Context, files []upload) ([]upload, error) {
		return perFile(ctx, files, func(ctx context.Context, data []byte) ([]byte, error) {
			return engine.OptimizeImages(ctx, data, engine.OptimizeOptions{Quality: q})
		})
	}
}

// optimizeRoute is POST /forms/pdfengines/optimize: it always optimizes
// (optimizeImages is not read), with imageQuality.
func optimizeRoute(f *form) engineJob {
	q, _ := readImageQuality(f)
	run := optimizeRun(q)
	return func(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) { return run(ctx, pdfs) }
}
