package gotenberg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// ManualID is the manual every conversion's artifact is stored under.
const ManualID = "gotenberg"

// conversion is an export a route built from its form.
type conversion struct {
	payload exportclient.Payload
	// files are the uploads whose digests name the artifact's version.
	files []upload
	// kind is the route's short name, the version's prefix.
	kind string
	// reuse is the URL routes' opt-in to a stored PDF (reuse.go); the
	// file routes always reuse, their bytes are their content.
	reuse reuse
	// post are the PDF-engine steps on the rendered PDF (post.go).
	post []postStep
	// shot: the export is an image (screenshot.go), which no PDF-engine
	// step takes.
	shot bool
}

// convert answers a Chromium route: build reads the form into a
// conversion, which is then an export through the queue, answered with
// the PDF from storage.
func (h *handler) convert(w http.ResponseWriter, r *http.Request, build func(r *http.Request, f *form) (conversion, error)) {
	f, err := readForm(w, r, h.formLimits)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := h.downloads(r.Context(), f, h.formLimits.bytes); err != nil {
		writeError(w, err)
		return
	}
	c, err := build(r, f)
	if err == nil && !c.shot {
		c.post = postSteps(f)
	}
	if err == nil {
		err = f.err()
	}
	if err != nil {
		writeError(w, err)
		return
	}
	p := &c.payload
	p.V, p.ManualID, p.RequestID = exportclient.PayloadVersion, ManualID, traceOf(r)
	p.Version = c.version()
	if err := h.cfg.Queue.Validate(*p); err != nil {
		writeError(w, validationErr(err))
		return
	}
	if hook, ok, err := h.webhookOf(r); err != nil {
		writeError(w, err)
		return
	} else if ok {
		h.asyncExport(w, r, hook, *p, f, c.post)
		return
	}
	if len(c.post) > 0 {
		res, err := h.exportResult(r, *p, c.post)(r.Context())
		if err != nil {
			if r.Context().Err() == nil {
				writeError(w, err)
			}
			return
		}
		writeResult(w, res)
		return
	}
	h.exportAndServe(w, r, *p)
}

// exportAndServe answers p's PDF: from storage when it is stored and may
// be reused, else after an export through the queue.
func (h *handler) exportAndServe(w http.ResponseWriter, r *http.Request, p exportclient.Payload) {
	ctx := r.Context()
	if key, ok := h.storedOf(ctx, p); ok {
		h.serve(w, r, key)
		return
	}
	key, err := h.export(ctx, r, p, h.cfg.Wait)
	if err != nil {
		if ctx.Err() == nil {
			writeError(w, err)
		}
		return
	}
	h.serve(w, r, key)
}

// storedOf is the key of p's artifact when storage answers for it (the
// /v1 path's check) and p may reuse it.
func (h *handler) storedOf(ctx context.Context, p exportclient.Payload) (string, bool) {
	if p.Force || h.cfg.Stored == nil {
		return "", false
	}
	res, ok := h.cfg.Stored(ctx, p)
	if ok {
		h.log.InfoContext(ctx, "gotenberg: answered from storage", "key", res.ArtifactKey, "trace", p.RequestID)
	}
	return p.ArtifactKey(), ok
}

// export enqueues p, waits for it at most wait and returns the key
// of its artifact. A conversion that outlives the wait, or whose caller
// went away, is canceled: nobody will read its PDF (an identical
// conversion waiting at the gate renders it instead).
func (h *handler) export(ctx context.Context, r *http.Request, p exportclient.Payload, wait time.Duration) (string, error) {
	job, err := h.enqueue(ctx, r, p)
	if err != nil {
		return "", err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	st, err := h.cfg.Queue.Wait(wctx, job.TaskID, time.Second)
	cancel()
	if err != nil || !st.Final() {
		cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, cerr := h.cfg.Queue.Cancel(cctx, job.TaskID)
		stop()
		h.log.WarnContext(ctx, "gotenberg: conversion not done in time; canceled", "task_id", job.TaskID, "wait", wait, "err", err, "cancel_err", cerr)
		// Gotenberg's answer to a conversion over its time limit.
		return "", &httpError{status: http.StatusServiceUnavailable, msg: http.StatusText(http.StatusServiceUnavailable)}
	}
	h.log.InfoContext(ctx, "gotenberg: conversion final", "task_id", job.TaskID, "state", st.State, "key", job.ArtifactKey, "trace", p.RequestID)
	switch st.State {
	case exportclient.StateCompleted:
		return job.ArtifactKey, nil
	case exportclient.StateCanceled:
		return "", &httpError{status: http.StatusServiceUnavailable, msg: http.StatusText(http.StatusServiceUnavailable)}
	}
	return "", failedErr(st)
}

// enqueue enqueues p on the caller's queue, for its client.
func (h *handler) enqueue(ctx context.Context, r *http.Request, p exportclient.Payload) (exportclient.Enqueued, error) {
	var opts []exportclient.EnqueueOption
	if queue, owner := h.cfg.Caller(r); queue != "" {
		opts = append(opts, exportclient.Queue(queue), exportclient.ForClient(owner))
	}
	job, err := h.cfg.Queue.EnqueuePayload(ctx, p, opts...)
	switch {
	case errors.Is(err, exportclient.ErrInvalid):
		return job, validationErr(err)
	case err != nil:
		h.log.ErrorContext(ctx, "gotenberg: enqueue failed", "err", err)
		return job, &httpError{status: http.StatusServiceUnavailable, msg: http.StatusText(http.StatusServiceUnavailable)}
	}
	return job, nil
}

// validationErr is exportclient's refusal in Gotenberg's words, naming
// the form field.
func validationErr(err error) error {
	var fe *exportclient.FieldError
	if !errors.As(err, &fe) {
		return badRequest("Invalid form data: %v", err)
	}
	var lines []string
	for _, e := range flatten(err) {
		if errors.As(e, &fe) {
			lines = append(lines, fmt.Sprintf("form field '%s' is invalid (%s)", formField(fe.Field), fe.Rule))
		}
	}
	return badRequest("Invalid form data: %s", strings.Join(lines, "\n"))
}

// flatten lists the errors a joined error holds.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			if _, isField := e.(*exportclient.FieldError); isField {
				out = append(out, e)
				continue
			}
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// version names the artifact: a SHA-256 over every uploaded file (name
// and bytes) and the normalized export (its source and options, with
// Gotenberg's defaults spelled out), and, for a URL, the reuse the caller
// opted in to. Identical conversions share it, and so their artifact.
func (c conversion) version() string {
	h := sha256.New()
	names := make([]string, 0, len(c.files))
	byName := map[string][]byte{}
	for _, u := range c.files {
		names = append(names, u.name)
		byName[u.name] = u.data
	}
	slices.Sort(names)
	for _, n := range names {
		sum := sha256.Sum256(byName[n])
		fmt.Fprintf(h, "file %q %x\n", n, sum)
	}
	p := c.payload
	p.RequestID = "" // the trace is the caller's, not the document's
	b, _ := json.Marshal(struct {
		Source  exportclient.PayloadSource
		Options exportclient.Options
	}{p.Source, p.Options})
	h.Write(b)
	h.Write([]byte("\nreuse " + c.reuse.token))
	return c.kind + "-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// traceOf is the Gotenberg-Trace header (the export's request id), or a
// new one; the response echoes it (handler.ServeHTTP).
func traceOf(r *http.Request) string { return r.Header.Get(traceHeader) }

const (
	traceHeader          = "Gotenberg-Trace"
	outputFilenameHeader = "Gotenberg-Output-Filename"
)

func newTrace() string { return uuid.NewString() }

// serve streams the artifact under key: Gotenberg's clients read the PDF
// from the response itself, so it is never a redirect to storage.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, key string) {
	ctx := r.Context()
	obj, err := h.cfg.Store.Stat(ctx, key)
	if err != nil {
		h.log.ErrorContext(ctx, "gotenberg: the PDF is not readable in storage", "key", key, "err", err)
		if errors.Is(err, storage.ErrNotFound) {
			writeText(w, http.StatusServiceUnavailable, "The PDF was made but is no longer in storage; retry")
			return
		}
		writeText(w, http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable))
		return
	}
	body, err := h.cfg.Store.Open(ctx, key)
	if err != nil {
		h.log.ErrorContext(ctx, "gotenberg: opening the PDF", "key", key, "err", err)
		writeText(w, http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable))
		return
	}
	defer body.Close()
	hd := w.Header()
	mediaType, name := answerType(key, outputName(r))
	hd.Set("Content-Type", mediaType)
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	hd.Set("Content-Length", strconv.FormatInt(obj.Size, 10))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(&idleWriter{w: w, rc: http.NewResponseController(w)}, body); err != nil && ctx.Err() == nil {
		h.log.WarnContext(ctx, "gotenberg: sending the PDF interrupted", "key", key, "err", err)
	}
}

// outputName is the download's file name: Gotenberg-Output-Filename (a
// base name; ".pdf" added) or a fresh id, as Gotenberg names it.
func outputName(r *http.Request) string {
	name := printable(r.Header.Get(outputFilenameHeader))
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSuffix(name, ".pdf")
	if name == "" || name == "." || name == ".." {
		name = uuid.NewString()
	}
	return name + ".pdf"
}

// writeIdle is how long one write of a PDF may take: each write extends
// the connection's deadline, so a large PDF streams to a slow reader and
// a stalled one is cut off.
const writeIdle = 30 * time.Second

type idleWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (d *idleWriter) Write(b []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(writeIdle))
	return d.w.Write(b)
}
