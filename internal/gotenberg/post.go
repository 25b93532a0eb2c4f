package gotenberg

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
)

// Gotenberg runs its PDF engines on a conversion's PDF after Chromium
// prints it, in this order (its chromium module's convert functions). A
// conversion's steps run in bin/api on the rendered PDF read from
// storage: the render is the expensive part and passes the render gate
// once per distinct document; the steps are the PDF engines' work on it.
const (
	stepSplit = iota
	stepWatermark
	stepStamp
	stepRotate
	stepOptimize
	stepConvert
	stepMetadata
	stepFlatten
	stepEmbed
	stepEncrypt
)

// postStep is one engine step on a conversion's output: it takes the
// files so far (one PDF, or the parts of a split) and gives the next.
type postStep struct {
	order int
	run   func(ctx context.Context, files []upload) ([]upload, error)
}

// postSteps reads the form fields of the steps after a conversion into
// the steps, in Gotenberg's order; an invalid field is in f's errors.
func postSteps(f *form) []postStep {
	var steps []postStep
	steps = append(steps, markMetadataEncryptSteps(f)...)
	steps = append(steps, pageSteps(f)...)
	if s, ok := convertStep(f); ok {
		steps = append(steps, s)
	}
	sortSteps(steps)
	return steps
}

// sortSteps puts steps in Gotenberg's order.
func sortSteps(steps []postStep) {
	slices.SortStableFunc(steps, func(a, b postStep) int { return a.order - b.order })
}

// runSteps reads the rendered PDF of res (at most MaxEngineBytes), runs
// the steps on it and packs their output as the answer, named name.
func (h *handler) runSteps(ctx context.Context, res result, steps []postStep, name string) (result, error) {
	defer res.body.Close()
	data, err := io.ReadAll(io.LimitReader(res.body, MaxEngineBytes+1))
	if err != nil {
		return result{}, &httpError{status: http.StatusServiceUnavailable, msg: "reading the PDF from storage failed"}
	}
	if len(data) > MaxEngineBytes {
		return result{}, &httpError{status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("The PDF is over %d bytes, the most its PDF-engine steps take", MaxEngineBytes)}
	}
	files := []upload{{name: name, data: data}}
	select {
	case h.engineSlot <- struct{}{}:
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
	defer func() { <-h.engineSlot }()
	for _, s := range steps {
		files, err = safely(func() ([]upload, error) { return s.run(ctx, files) })
		if err != nil {
			return result{}, err
		}
	}
	return pack(files, name)
}

// writeResult answers res in full.
func writeResult(w http.ResponseWriter, res result) {
	defer res.body.Close()
	w.Header().Set("Content-Type", res.contentType)
	if res.contentType != "application/json" {
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": res.fileName}))
	}
	w.Header().Set("Content-Length", strconv.FormatInt(res.size, 10))
	_, _ = io.Copy(w, res.body)
}
