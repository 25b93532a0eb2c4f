package gotenberg

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// The PDF-engine routes work on PDFs the caller uploads: nothing is
// rendered, so they run here in bin/api with pdfcpu (pure Go, in memory),
// bounded: MaxEngineBytes per request and Config.EngineJobs at once. Their
// output is not stored; it is the answer.

// MaxEngineBytes bounds a PDF-engine request: the most the worker's
// post-processing takes too (internal/tasks/export.MaxPostProcessBytes).
const MaxEngineBytes = 32 << 20

// maxEngineFiles bounds the PDFs of one request.
const maxEngineFiles = 64

// DefaultEngineJobs is Config.EngineJobs' default: pdfcpu holds a whole
// document, several times its size, so a few jobs at once bound the
// memory of bin/api.
const DefaultEngineJobs = 2

// refusedRoutes are Gotenberg's routes pdfexport answers 501, and why.
var refusedRoutes = map[string]string{
	"/forms/pdfengines/factur-x": "Factur-X invoices are not offered",
}

func (h *handler) engineRoutes() {
	h.handle("POST /forms/pdfengines/merge", h.engine(mergeRoute))
	h.handle("POST /forms/pdfengines/metadata/read", h.engine(plain(readMetadata)))
	h.handle("POST /forms/pdfengines/metadata/write", h.engine(writeMetadataRoute))
	h.handle("POST /forms/pdfengines/encrypt", h.engine(encryptRoute))
	h.handle("POST /forms/pdfengines/convert", h.engine(convertRoute))
	h.handle("POST /forms/pdfengines/stamp", h.engine(marksRoute("stamp")))
	h.handle("POST /forms/pdfengines/watermark", h.engine(marksRoute("watermark")))
	h.pageRoutes()
	for route, why := range refusedRoutes {
		h.handle("POST "+route, notImplemented(route, why))
	}
}

// engineJob turns the PDFs of a form into the answer's files, or its
// JSON (metadata/read).
type engineJob func(ctx context.Context, f *form, pdfs []upload) ([]upload, error)

// engineRoute reads a route's fields, as Gotenberg does before it looks
// for the PDFs (their errors come first), and returns its job.
type engineRoute func(f *form) engineJob

// plain is a route whose job reads its own fields.
func plain(job engineJob) engineRoute { return func(*form) engineJob { return job } }

// jsonAnswer is the "error" of an engineJob whose answer is JSON, not
// files.
type jsonAnswer struct{ body []byte }

func (j *jsonAnswer) Error() string { return "a JSON answer" }

// engine reads the form of a PDF-engine route, holds one of the
// EngineJobs slots while job runs, and answers its output: one PDF, or a
// zip of several, as Gotenberg does.
func (h *handler) engine(route engineRoute) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, err := readForm(w, r, limits{bytes: MaxEngineBytes, parts: maxEngineFiles + 16, valueBytes: 64 << 10})
		if err != nil {
			writeError(w, err)
			return
		}
		// downloadFrom's files are the route's input as if uploaded.
		if err := h.downloads(r.Context(), f, MaxEngineBytes); err != nil {
			writeError(w, err)
			return
		}
		job := route(f)
		var pdfs []upload
		for _, u := range f.files {
			if strings.HasSuffix(strings.ToLower(u.name), ".pdf") {
				pdfs = append(pdfs, u)
			}
		}
		if len(pdfs) == 0 {
			f.errs = append(f.errs, "no form file found for extensions: [.pdf]")
			writeError(w, f.err())
			return
		}
		if len(pdfs) > maxEngineFiles {
			writeError(w, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("Invalid form data: more than %d PDFs", maxEngineFiles)})
			return
		}
		// Gotenberg takes the files in the alphabetical order of their names.
		slices.SortFunc(pdfs, func(a, b upload) int { return strings.Compare(a.name, b.name) })
		run := func(ctx context.Context) (result, error) {
			if err := f.err(); err != nil {
				return result{}, err
			}
			select {
			case h.engineSlot <- struct{}{}:
			case <-ctx.Done():
				return result{}, ctx.Err()
			}
			out, err := safely(func() ([]upload, error) { return job(ctx, f, pdfs) })
			<-h.engineSlot
			if err == nil {
				err = f.err()
			}
			var j *jsonAnswer
			if errors.As(err, &j) {
				return result{body: io.NopCloser(bytes.NewReader(j.body)), size: int64(len(j.body)), contentType: "application/json", fileName: "metadata.json"}, nil
			}
			if err != nil {
				return result{}, err
			}
			return pack(out, engineOutputName(r, out))
		}
		if hk, ok, err := h.webhookOf(r); err != nil {
			writeError(w, err)
			return
		} else if ok {
			h.asyncEngine(w, r, hk, filesOnly(run))
			return
		}
		res, err := run(r.Context())
		if err != nil {
			if r.Context().Err() == nil {
				writeError(w, err)
			}
			return
		}
		writeResult(w, res)
	}
}

// safely runs job, turning a pdfcpu panic (it has some on malformed
// input) into a 400: the input is the caller's.
func safely(job func() ([]upload, error)) (out []upload, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, badRequest("The PDF could not be processed: %v", r)
		}
	}()
	return job()
}

// pack is one PDF as itself and several as a zip, as Gotenberg answers
// them; name is the answer's file name.
func pack(files []upload, name string) (result, error) {
	if len(files) == 1 {
		return result{body: io.NopCloser(bytes.NewReader(files[0].data)), size: int64(len(files[0].data)), contentType: "application/pdf", fileName: name}, nil
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		fw, err := zw.Create(f.name)
		if err == nil {
			_, err = fw.Write(f.data)
		}
		if err != nil {
			return result{}, err
		}
	}
	if err := zw.Close(); err != nil {
		return result{}, err
	}
	return result{body: io.NopCloser(&buf), size: int64(buf.Len()), contentType: "application/zip",
		fileName: strings.TrimSuffix(name, ".pdf") + ".zip"}, nil
}

// refuseEngineFields refuses the fields of the engine routes pdfexport
// does not offer, by name.
func refuseEngineFields(f *form) {
	if f.bool("flatten", false) {
		f.errs = append(f.errs, unsupported("flatten", "flattening is not offered").Error())
	}
}

// filesOnly refuses a JSON answer (metadata/read) to a webhook, in
// Gotenberg's words: its webhook delivers output files.
func filesOnly(run func(ctx context.Context) (result, error)) func(ctx context.Context) (result, error) {
	return func(ctx context.Context) (result, error) {
		res, err := run(ctx)
		if err == nil && res.contentType == "application/json" {
			res.body.Close()
			return result{}, badRequest("The webhook middleware can only work with multipart/form-data routes that results in output files")
		}
		return res, err
	}
}
