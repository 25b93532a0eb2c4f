package gotenberg

import (
	"context"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// flattenStep draws the annotations and form fields of every PDF into
// its pages, when flatten is true.
func flattenStep(f *form) (postStep, bool) {
	if !f.bool("flatten", false) {
		return postStep{}, false
	}
	return postStep{order: stepFlatten, run: flattenRun}, true
}

func flattenRun(ctx context.Context, files []upload) ([]upload, error) {
	return perFile(ctx, files, func(ctx context.Context, data []byte) ([]byte, error) {
		return engine.Flatten(ctx, data, engine.FlattenOptions{})
	})
}

// flattenRoute is POST /forms/pdfengines/flatten.
func flattenRoute(*form) engineJob {
	return func(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) { return flattenRun(ctx, pdfs) }
}
