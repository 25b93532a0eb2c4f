package gotenberg

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// The page-level PDF-engine work: split, rotate, image optimisation,
// flattening, attachments and outlines, as routes of their own and as a
// conversion's steps (split.go, rotate.go, optimize.go, flatten.go,
// embed.go, bookmarks.go).

func (h *handler) pageRoutes() {
	h.handle("POST /forms/pdfengines/split", h.engine(splitRoute))
	h.handle("POST /forms/pdfengines/rotate", h.engine(rotateRoute))
	h.handle("POST /forms/pdfengines/optimize", h.engine(optimizeRoute))
	h.handle("POST /forms/pdfengines/flatten", h.engine(flattenRoute))
	h.handle("POST /forms/pdfengines/embed", h.engine(embedRoute))
	h.handle("POST /forms/pdfengines/bookmarks/read", h.engine(plain(readBookmarks)))
	h.handle("POST /forms/pdfengines/bookmarks/write", h.engine(writeBookmarksRoute))
}

// pageSteps are the steps of the fields a conversion (and the split
// route) set: splitMode, rotateAngle, optimizeImages, flatten, embeds.
func pageSteps(f *form) []postStep {
	var steps []postStep
	for _, read := range []func(*form) (postStep, bool){splitStep, rotateStep, optimizeStep, flattenStep, embedStep} {
		if s, ok := read(f); ok {
			steps = append(steps, s)
		}
	}
	return steps
}

// perFile runs op on each file, keeping its name.
func perFile(ctx context.Context, files []upload, op func(ctx context.Context, data []byte) ([]byte, error)) ([]upload, error) {
	out := make([]upload, 0, len(files))
	for _, f := range files {
		data, err := op(ctx, f.data)
		if err != nil {
			return nil, pageErr(f.name, err)
		}
		out = append(out, upload{name: f.name, data: data})
	}
	return out, nil
}

// pageErrors are the answers to the engine's refusals the caller can
// act on by field; any other refusal of the input is a 400 naming the
// file.
var pageErrors = []struct {
	err    error
	status int
	answer func(name string, err error) string
}{
	{engine.ErrTooManyParts, http.StatusBadRequest, func(_ string, err error) string {
		return fmt.Sprintf("Invalid form data: form field 'splitSpan' is invalid (%s)", reason(err))
	}},
	{engine.ErrPartsTooLarge, http.StatusRequestEntityTooLarge, func(name string, err error) string {
		return fmt.Sprintf("Invalid form data: form field 'splitSpan' splits '%s' into too much (%s)", printable(name), reason(err))
	}},
	{engine.ErrArchiveBomb, http.StatusBadRequest, func(name string, err error) string {
		return fmt.Sprintf("Invalid form data: form field 'embeds' is invalid (%s)", reason(err))
	}},
}

// pageErr is the answer to an engine error on the file name.
func pageErr(name string, err error) error {
	var ie *engine.InputError
	if !errors.As(err, &ie) {
		return err
	}
	for _, e := range pageErrors {
		if errors.Is(err, e.err) {
			return &httpError{status: e.status, msg: e.answer(name, err)}
		}
	}
	return badRequest("The PDF '%s' could not be processed: %s", printable(name), reason(ie.Err))
}

// reason is an error's message for an answer, bounded.
func reason(err error) string {
	msg := err.Error()
	if len(msg) > 4*maxEcho {
		msg = strings.ToValidUTF8(msg[:4*maxEcho], "") + "…"
	}
	return msg
}

// engineOutputName names an engine route's answer: Gotenberg-Output-
// Filename, else a single PDF's own name (as Gotenberg keeps it), else
// a fresh id.
func engineOutputName(r *http.Request, out []upload) string {
	if r.Header.Get(outputFilenameHeader) == "" && len(out) == 1 {
		return out[0].name
	}
	return outputName(r)
}
