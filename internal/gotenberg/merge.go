package gotenberg

import (
	"context"
	"slices"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// mergeRoute is POST /forms/pdfengines/merge: the PDFs in name order as
// one, then the steps its fields ask for, in Gotenberg's order.
func mergeRoute(f *form) engineJob {
	refuseEngineFields(f)
	outline := mergeOutline(f)
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
		run := steps
		if !outline.Empty() {
			bms, err := engine.MergedOutline(ctx, files, outline)
			if err != nil {
				return nil, engineErr("merged.pdf", err)
			}
			// Gotenberg writes the outline after the marks and before
			// the metadata and the encryption.
			run = append(slices.Clone(steps), postStep{order: stepConvert, run: func(ctx context.Context, files []upload) ([]upload, error) {
				return eachPDF(files, func(data []byte) ([]byte, error) {
					return engine.WriteBookmarks(ctx, data, engine.WriteBookmarksOptions{Bookmarks: bms})
				})
			}})
			sortSteps(run)
		}
		for _, s := range run {
			if out, err = s.run(ctx, out); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// mergeOutline reads merge's outline fields: bookmarks (a list, or lists
// by file name), autoIndexBookmarks, titleBookmarks.
func mergeOutline(f *form) engine.MergeOutline {
	var o engine.MergeOutline
	if f.has("bookmarks") {
		o.List, o.ByName = readBookmarksField(f)
		for _, bms := range append([][]engine.Bookmark{o.List}, mapValues(o.ByName)...) {
			if err := engine.CheckBookmarks(bms); err != nil {
				f.invalid("bookmarks", f.value("bookmarks"), err)
				break
			}
		}
	}
	o.AutoIndex = f.bool("autoIndexBookmarks", false)
	o.Titles = f.bool("titleBookmarks", false)
	return o
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
	if s, ok := convertStep(f); ok {
		steps = append(steps, s)
	}
	sortSteps(steps)
	return steps
}
