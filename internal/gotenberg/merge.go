package gotenberg

import (
	"context"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// mergeRoute is POST /forms/pdfengines/merge: the PDFs in name order as
// one, then the steps its fields ask for, in Gotenberg's order.
func mergeRoute(f *form) engineJob {
	refuseEngineFields(f)
	for _, k := range []string{"bookmarks", "autoIndexBookmarks", "titleBookmarks"} {
		if v := f.value(k); v != "" && v != "false" {
			f.errs = append(f.errs, unsupported(k, "bookmarks are made by generateDocumentOutline at conversion").Error())
		}
	}
	steps := mergeSteps(f)
	return func(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) {
		files := make([]engine.File, len(pdfs))
		for i, p := range pdfs {
			files[i] = engine.File{Name: p.name, Data: p.data}
		}
		data, err := engine.Merge(ctx, files, engine.MergeOptions{})
		if err != nil {
			return nil, engineErr("merged.pdf", err)
		}
		out := []upload{{name: "merged.pdf", data: data}}
		for _, s := range steps {
			if out, err = s.run(ctx, out); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// markMetadataEncryptSteps are the watermark, stamp, metadata and
// encryption steps a conversion's or a merge's fields ask for.
func markMetadataEncryptSteps(f *form) []postStep {
	var steps []postStep
	for _, read := range []func(*form) (postStep, bool){
		func(f *form) (postStep, bool) { return markStep(f, "watermark") },
		func(f *form) (postStep, bool) { return markStep(f, "stamp") },
		metadataStep,
		encryptStep,
	} {
		if s, ok := read(f); ok {
			steps = append(steps, s)
		}
	}
	return steps
}

// mergeSteps are merge's steps after the merge, in Gotenberg's order.
func mergeSteps(f *form) []postStep {
	steps := markMetadataEncryptSteps(f)
	sortSteps(steps)
	return steps
}
