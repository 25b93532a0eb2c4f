package api

import (
	"context"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage/artifact"
)

// storedResult is the result a worker would give p from storage alone, and
// whether storage can answer for p at all: the PDF under p's key (the
// worker's own derivation, Payload.ArtifactKey) and its info object,
// describing that very PDF (its ETag), whose warnings the options'
// fail_on_* do not refuse. When any of that is missing (not stored, an info
// a crashed renderer did not write, warnings the worker would fail on,
// storage unavailable), the export is queued and the worker decides, as
// before.
func (a *api) storedResult(ctx context.Context, p exportclient.Payload) (exportclient.Result, bool) {
	if a.store == nil || !exportclient.Reusable(p) {
		return exportclient.Result{}, false
	}
	key := p.ArtifactKey()
	obj, err := a.store.Stat(ctx, key)
	if err != nil {
		return exportclient.Result{}, false
	}
	info, err := artifact.ReadInfo(ctx, a.store, key)
	if err != nil || info.ETag != obj.ETag || info.Pages <= 0 {
		return exportclient.Result{}, false
	}
	failOn := spec.FailOn{ResourceErrors: p.Options.FailOnResourceErrors, ConsoleErrors: p.Options.FailOnConsoleErrors}
	if (failOn.ResourceErrors || failOn.ConsoleErrors) && info.WarningsOmitted > 0 {
		return exportclient.Result{}, false
	}
	var warnings []exportclient.Warning
	for _, w := range info.Warnings {
		if failOn.Offends(w) {
			return exportclient.Result{}, false
		}
		warnings = append(warnings, exportclient.Warning(w))
	}
	res := exportclient.Result{ArtifactKey: obj.Key, URL: obj.URL, ETag: obj.ETag, Bytes: obj.Size, Pages: info.Pages,
		Warnings: warnings, WarningsOmitted: info.WarningsOmitted}
	if n := len(p.Source.Chapters); n > 0 {
		res.Chapters = &exportclient.ChapterCounts{Total: n, Reused: n}
	}
	return res, true
}
