package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/credstore"
	"github.com/pdfexport/pdfexport/internal/htmlstore"
	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/redact"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/sourceauth"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// Store is what the handler needs from artifact storage.
type Store interface {
	Stat(ctx context.Context, key string) (storage.Object, error)
	Create(ctx context.Context, key string, r io.Reader, o storage.PutOptions) (storage.Object, error)
	Replace(ctx context.Context, key, ifMatchETag string, r io.Reader, o storage.PutOptions) (storage.Object, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Renderer prints a source to PDF and streams it to sink.
type Renderer interface {
	Render(ctx context.Context, src render.Source, s spec.PrintSettings, sink func(ctx context.Context, pdf io.Reader) error) (render.Stats, error)
}

// Gate serializes renders of one artifact across workers.
type Gate interface {
	Enter(ctx context.Context, id, staleETag string) (lock.Entry, error)
	// ForgetStored erases a stored outcome whose artifact is gone, if the
	// gate still records that etag (lock.Gate.ForgetStored).
	ForgetStored(ctx context.Context, id, etag string) (bool, error)
}

// Sources holds the HTML documents that payloads name by reference
// (htmlstore.Store).
type Sources interface {
	Get(ctx context.Context, ref spec.HTMLRef) (string, error)
	Release(ctx context.Context, ref spec.HTMLRef) error
}

// Credentials holds the per-export source credentials that payloads name by
// reference (credstore.Store).
type Credentials interface {
	Get(ctx context.Context, ref spec.CredentialsRef) (credstore.Credentials, error)
	Release(ctx context.Context, ref spec.CredentialsRef) error
}

// job is a payload and the credentials its reference resolved to.
type job struct {
	spec.Payload
	auth sourceauth.Credentials
}

// Finals reports an export's final outcome: it wakes waiting clients and
// enqueues the callback (outcome.Reporter).
type Finals interface {
	Final(ctx context.Context, queue string, f spec.Final, cb *spec.Callback) error
}

// Cancellations tells whether an export was canceled by request
// (outcome.Cancels).
type Cancellations interface {
	Canceled(ctx context.Context, taskID string) (bool, error)
}

// ErrCanceled ends an export canceled by request: final, never retried.
var ErrCanceled = errors.New("export canceled by request")

// Observer receives export outcomes for metrics.
type Observer interface {
	ExportDone(outcome string, d time.Duration) // rendered | reused | failed
	StorageBytes(op string, n int64)
}

// Config wires a Handler.
type Config struct {
	Store    Store
	Renderer Renderer
	Gate     Gate
	// Hosts are ALLOWED_HOSTS and CALLBACK_ALLOWED_HOSTS.
	Hosts spec.Hosts
	// Namespace separates lock ids of different storage locations sharing
	// one Redis; use the STORAGE_URL.
	Namespace string
	Logger    *slog.Logger
	Observer  Observer
	// Sources resolves source.html_ref; nil refuses such payloads.
	Sources Sources
	// Credentials resolves source.credentials_ref; nil refuses such
	// payloads.
	Credentials Credentials
	// Hostname goes into the artifact's metadata; default os.Hostname.
	Hostname string
	// Finals receives every final outcome; nil: nobody is told.
	Finals Finals
	// Cancellations is asked when a task starts and when its context is
	// canceled; nil: exports are never canceled by request.
	Cancellations Cancellations
	// PublicURL is bin/api's base URL (API_PUBLIC_URL); when set, results
	// carry download_url.
	PublicURL string
}

// Handler processes pdf:export tasks. It is safe for concurrent use.
type Handler struct {
	cfg Config
}

// NewHandler returns a Handler; Store, Renderer and Gate are required.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Store == nil || cfg.Renderer == nil || cfg.Gate == nil {
		return nil, errors.New("tasks: Store, Renderer and Gate are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Hostname == "" {
		cfg.Hostname, _ = os.Hostname()
	}
	return &Handler{cfg: cfg}, nil
}

type nopObserver struct{}

func (nopObserver) ExportDone(string, time.Duration) {}
func (nopObserver) StorageBytes(string, int64)       {}

// ErrStoredButMissing: a holder announced a stored artifact that storage
// does not have (storage lost it, or workers disagree on STORAGE_URL).
var ErrStoredButMissing = errors.New("tasks: artifact announced as stored is missing from storage")

// maxGatePasses bounds how often a task goes back to the gate after a
// holder failed or vanished, so a poisoned key cannot spin a worker forever.
const maxGatePasses = 5

// ProcessTask implements asynq.Handler.
func (h *Handler) ProcessTask(ctx context.Context, t *asynq.Task) (rerr error) {
	start := time.Now()
	taskID, _ := asynq.GetTaskID(ctx)
	log := h.cfg.Logger.With("task_id", taskID)
	p, err := spec.Decode(t.Payload())
	var res *spec.Result
	var ref *spec.HTMLRef            // a document that travelled beside the task
	var credRef *spec.CredentialsRef // credentials that travelled beside it
	ctx, span := startExport(ctx, taskID, p, err)
	defer func() { endExport(span, res, rerr) }() // after the final report below
	defer func() {
		stopped := rerr != nil && h.canceled(ctx, taskID)
		if stopped {
			rerr = fmt.Errorf("%w: %w", ErrCanceled, asynq.SkipRetry)
			log.InfoContext(ctx, "export canceled by request", "ms", time.Since(start).Milliseconds())
		}
		if ref != nil && !stopped {
			// Its reference goes once the task is final, whatever the
			// outcome; a retry needs it still. asynq moves a task whose
			// context was canceled to retry, whatever it returns: whoever
			// archives it then (the canceller, or its next attempt, which
			// finds the cancel mark) gives the reference back, once.
			h.releaseSource(ctx, log, *ref, rerr)
		}
		if credRef != nil && !stopped {
			h.releaseCredentials(ctx, log, *credRef, rerr)
		}
		if final(ctx, rerr) {
			h.finish(ctx, log, taskID, p, res, rerr)
		}
	}()
	if err == nil {
		ref, credRef = p.Source.HTMLRef, p.Source.Credentials
	}
	if h.canceledBeforeStart(ctx, taskID) {
		return fmt.Errorf("%w: %w", ErrCanceled, asynq.SkipRetry)
	}
	if err == nil {
		err = p.Validate(h.cfg.Hosts)
	}
	if err == nil && ref != nil {
		var html string
		html, err = h.source(ctx, *ref)
		if err != nil && !errors.Is(err, spec.ErrInvalid) {
			h.cfg.Observer.ExportDone("failed", time.Since(start))
			log.WarnContext(ctx, "reading the source document failed; retrying", "err", err)
			return err
		}
		if err == nil {
			p.Source = spec.Source{HTML: html}
			err = p.Validate(h.cfg.Hosts)
		}
	}
	if err == nil && (len(p.Source.Headers) > 0 || len(p.Source.Cookies) > 0) {
		err = &spec.FieldError{Field: "source.headers", Rule: "per-export credentials travel beside the task, never in it: enqueue through exportclient, bin/api or bin/enqueue, which store them and send source.credentials_ref"}
	}
	var auth sourceauth.Credentials
	if err == nil && credRef != nil {
		var c credstore.Credentials
		c, err = h.credentials(ctx, *credRef)
		if err != nil && !errors.Is(err, spec.ErrInvalid) {
			h.cfg.Observer.ExportDone("failed", time.Since(start))
			log.WarnContext(ctx, "reading the source credentials failed; retrying", "err", err)
			return err
		}
		auth = sourceauth.New(c.Headers, c.Cookies)
	}
	if err != nil {
		err = redact.Error(err)
		log.WarnContext(ctx, "export rejected", "field", spec.FirstField(err), "err", err)
		h.cfg.Observer.ExportDone("failed", time.Since(start))
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	key := p.ArtifactKey()
	log = log.With("manual_id", p.ManualID, "version", p.Version, "key", key, "request_id", p.RequestID)

	r, err := h.export(ctx, log, job{p, auth}, key)
	if err != nil {
		// The error becomes the task's error (the dashboard, status): no
		// password or query value of any URL in it.
		err = redact.Error(err)
		h.cfg.Observer.ExportDone("failed", time.Since(start))
		log.ErrorContext(ctx, "export failed", "err", err, "retryable", !errors.Is(err, asynq.SkipRetry), "ms", time.Since(start).Milliseconds())
		return err
	}
	outcome := "reused"
	if r.Rendered {
		outcome = "rendered"
	}
	if h.cfg.PublicURL != "" && taskID != "" {
		r.DownloadURL = strings.TrimSuffix(h.cfg.PublicURL, "/") + "/v1/exports/" + url.PathEscape(taskID) + "/pdf"
	}
	h.cfg.Observer.ExportDone(outcome, time.Since(start))
	log.InfoContext(ctx, "export done", "outcome", outcome, "bytes", r.Bytes, "pages", r.Pages,
		"render_ms", r.RenderMS, "waited_ms", r.WaitedMS, "fail_open", r.FailOpen, "ms", time.Since(start).Milliseconds())
	if w := t.ResultWriter(); w != nil {
		b, _ := json.Marshal(r)
		if _, err := w.Write(b); err != nil {
			// The artifact is stored; losing the result only hides it from
			// status readers, so retrying the task (a cheap reuse) is right.
			return fmt.Errorf("writing task result: %w", err)
		}
	}
	res = &r
	return nil
}

// final reports whether the attempt that ended with err is the task's last:
// it succeeded, failed for good, or failed on its last retry. An attempt
// whose context was canceled (the worker shutting down, asynq's cancel
// without a cancel request) is not: asynq puts the task back, whatever the
// retry count.
func final(ctx context.Context, err error) bool {
	if err == nil || errors.Is(err, asynq.SkipRetry) {
		return true
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return false
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return retried >= maxRetry
}

// canceledBeforeStart: a task canceled while asynq was handing it to us
// (after the canceller saw it pending, before our cancel function existed).
func (h *Handler) canceledBeforeStart(ctx context.Context, taskID string) bool {
	if h.cfg.Cancellations == nil || taskID == "" {
		return false
	}
	c, err := h.cfg.Cancellations.Canceled(ctx, taskID)
	return err == nil && c
}

// canceled reports whether a task that failed did so because it was
// canceled by request: asynq canceled its context (not a deadline, not the
// worker's shutdown) and the cancel marker is there.
func (h *Handler) canceled(ctx context.Context, taskID string) bool {
	if h.cfg.Cancellations == nil || taskID == "" || ctx.Err() == nil || context.Cause(ctx) != context.Canceled {
		return false
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	c, err := h.cfg.Cancellations.Canceled(rctx, taskID)
	return err == nil && c
}

// finish reports a final outcome: waiting clients wake, the callback is
// enqueued. A callback that cannot be enqueued is logged, not retried by
// failing the export (its artifact is stored; the result is readable).
func (h *Handler) finish(ctx context.Context, log *slog.Logger, taskID string, p spec.Payload, res *spec.Result, err error) {
	if h.cfg.Finals == nil || taskID == "" {
		return
	}
	f := spec.Final{TaskID: taskID, State: spec.StateCompleted, ManualID: p.ManualID, Version: p.Version, RequestID: p.RequestID, Result: res}
	switch {
	case errors.Is(err, ErrCanceled):
		f.State, f.Error = spec.StateCanceled, err.Error()
	case err != nil:
		f.State, f.Error = spec.StateFailed, err.Error()
	}
	f.Retried, _ = asynq.GetRetryCount(ctx)
	queue, _ := asynq.GetQueueName(ctx)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if ferr := h.cfg.Finals.Final(rctx, queue, f, p.Callback); ferr != nil {
		log.ErrorContext(ctx, "reporting the final outcome failed; waiters fall back to polling", "state", f.State, "callback", p.Callback != nil, "err", redact.Error(ferr))
	}
}

func (h *Handler) export(ctx context.Context, log *slog.Logger, p job, key string) (spec.Result, error) {
	var staleETag string
	obj, err := h.cfg.Store.Stat(ctx, key)
	switch {
	case err == nil && (!p.Force || storedBy(ctx, obj)):
		// Stored already — by this very task too, when an earlier attempt
		// stored it and then failed (its result write, its lease): a retry
		// of a forced export must not render and replace again.
		return h.reuse(ctx, key, obj, 0, false, p.Options.Settings().FailOn)
	case err == nil:
		staleETag = obj.ETag
	case !errors.Is(err, storage.ErrNotFound):
		return spec.Result{}, fmt.Errorf("checking storage for %s: %w", key, err)
	}

	id := h.lockID(key)
	var waited time.Duration
	for pass := 1; ; pass++ {
		entry, err := h.cfg.Gate.Enter(ctx, id, staleETag)
		if err != nil {
			return spec.Result{}, fmt.Errorf("render gate for %s: %w", key, err)
		}
		waited += entry.Waited
		switch entry.Result {
		case lock.Released:
			obj, err := h.cfg.Store.Stat(ctx, key)
			if err == nil {
				return h.reuse(ctx, key, obj, waited, false, p.Options.Settings().FailOn)
			}
			if !errors.Is(err, storage.ErrNotFound) {
				return spec.Result{}, fmt.Errorf("reading the artifact another worker stored: %w", err)
			}
			if pass >= maxGatePasses {
				return spec.Result{}, fmt.Errorf("%w: %s", ErrStoredButMissing, key)
			}
			// The artifact was deleted after it was stored (an operator, a
			// lifecycle rule, another disk behind STORAGE_URL): forget that
			// it was, if nobody stored a newer one meanwhile, and race for the
			// lock to render it again.
			forgot, ferr := h.cfg.Gate.ForgetStored(ctx, id, entry.Outcome.ETag)
			if ferr != nil {
				return spec.Result{}, fmt.Errorf("render gate for %s: %w", key, ferr)
			}
			log.WarnContext(ctx, "artifact announced as stored is missing from storage; rendering it again", "etag", entry.Outcome.ETag, "marker_erased", forgot, "pass", pass)
			continue
		case lock.FailOpen:
			return h.renderAndStore(ctx, log, p, key, staleETag, nil, waited)
		case lock.Acquired:
			return h.renderUnderLease(ctx, log, p, key, staleETag, entry.Lease, waited)
		default:
			return spec.Result{}, fmt.Errorf("render gate for %s: unexpected result %s", key, entry.Result)
		}
	}
}

func (h *Handler) renderUnderLease(ctx context.Context, log *slog.Logger, p job, key, staleETag string, lease *lock.Lease, waited time.Duration) (spec.Result, error) {
	log = log.With("fence", lease.Fence())
	// Another worker may have stored the artifact after our first look and
	// before we got the lock (its done marker expired, or it failed open).
	if obj, err := h.cfg.Store.Stat(lease.Context(), key); err == nil && (staleETag == "" || obj.ETag != staleETag) {
		h.release(ctx, log, lease, lock.Outcome{Status: lock.StatusStored, ETag: obj.ETag})
		return h.reuse(ctx, key, obj, waited, false, p.Options.Settings().FailOn)
	}
	res, err := h.renderAndStore(lease.Context(), log, p, key, staleETag, lease, waited)
	if err != nil {
		if cause := context.Cause(lease.Context()); errors.Is(cause, lock.ErrLockLost) {
			err = fmt.Errorf("%w (render abandoned, nothing stored): %w", cause, err)
		}
		h.release(ctx, log, lease, lock.Outcome{Status: lock.StatusFailed})
		return spec.Result{}, err
	}
	h.release(ctx, log, lease, lock.Outcome{Status: lock.StatusStored, ETag: res.ETag})
	return res, nil
}

func (h *Handler) release(ctx context.Context, log *slog.Logger, lease *lock.Lease, o lock.Outcome) {
	if err := lease.Release(ctx, o); err != nil {
		// Waiters still wake by polling (stored) or by the lease expiring
		// (failed), so a failed release only costs them time.
		log.WarnContext(ctx, "releasing the render lock failed", "outcome", string(o.Status), "err", err)
	}
}

// renderAndStore renders p and streams it into storage. With a lease, the
// stream's end is held back until the lease is confirmed, so storage (which
// commits only after the last byte) never publishes a render whose lock was
// lost; without one (fail-open), create-only storage keeps the first copy.
func (h *Handler) renderAndStore(ctx context.Context, log *slog.Logger, p job, key, staleETag string, lease *lock.Lease, waited time.Duration) (spec.Result, error) {
	started := time.Now()
	failOpen := lease == nil
	var fence int64
	if lease != nil {
		fence = lease.Fence()
	}
	var stored storage.Object
	var storeErr error
	settings := p.Options.Settings()
	src := render.Source{URL: p.Source.URL, HTML: p.Source.HTML, Auth: p.auth}
	taskID, _ := asynq.GetTaskID(ctx) // the sink's context is the renderer's, not the task's
	stats, err := h.cfg.Renderer.Render(ctx, src, settings, func(ctx context.Context, pdf io.Reader) error {
		opts := storage.PutOptions{
			FileName: p.ManualID + "-" + p.Version + ".pdf",
			Metadata: map[string]string{
				"manual-id":    p.ManualID,
				"version":      p.Version,
				"options-hash": p.ContentHash()[:16],
				"renderer":     h.cfg.Hostname,
				"fence":        strconv.FormatInt(fence, 10),
			},
		}
		if taskID != "" {
			opts.Metadata[taskIDMeta] = taskID
		}
		if lease != nil {
			pdf = &confirmAtEOF{r: pdf, confirm: func() error { return lease.Confirm(ctx) }}
		}
		uctx, upload := startUpload(ctx, key, staleETag != "")
		if staleETag != "" {
			stored, storeErr = h.cfg.Store.Replace(uctx, key, staleETag, pdf, opts)
		} else {
			stored, storeErr = h.cfg.Store.Create(uctx, key, pdf, opts)
		}
		endUpload(upload, stored, storeErr)
		if errors.Is(storeErr, storage.ErrExists) || staleETag != "" && errors.Is(storeErr, storage.ErrPreconditionFailed) {
			// Someone else stored it first (a fail-open duplicate), or
			// replaced the object a forced render meant to replace: storage
			// kept theirs, which is what every reader gets.
			_, _ = io.Copy(io.Discard, pdf)
			return nil
		}
		return storeErr
	})
	renderMS := time.Since(started).Milliseconds()
	if err != nil {
		// The sink (storage) failed on its own: retry. A stream that failed
		// under the sink (a PDF over a limit, a crashed browser) fails the
		// store too, but the render's error is the cause.
		if storeErr != nil && errors.Is(err, render.ErrSink) {
			return spec.Result{}, fmt.Errorf("storing %s: %w", key, storeErr)
		}
		// A render stopped by our own context (lease lost, task deadline,
		// shutdown) says nothing about the document: retry. Only a failure the
		// page itself caused (HTTP 404, a blocked source, a PDF over a limit)
		// is final.
		if !render.Retryable(err) && ctx.Err() == nil {
			return spec.Result{}, fmt.Errorf("rendering %s: %w: %w", key, err, asynq.SkipRetry)
		}
		return spec.Result{}, fmt.Errorf("rendering %s: %w", key, err)
	}
	if errors.Is(storeErr, storage.ErrExists) || errors.Is(storeErr, storage.ErrPreconditionFailed) {
		obj, err := h.cfg.Store.Stat(ctx, key)
		if err != nil {
			return spec.Result{}, fmt.Errorf("reading %s after a concurrent store: %w", key, err)
		}
		if obj.ETag == staleETag && staleETag != "" {
			return spec.Result{}, fmt.Errorf("replacing %s: %w", key, storeErr) // not replaced after all: retry
		}
		log.InfoContext(ctx, "artifact already stored by another worker; ours discarded", "fail_open", failOpen)
		res, err := h.reuse(ctx, key, obj, waited, failOpen, p.Options.Settings().FailOn)
		res.RenderMS = renderMS
		return res, err
	}
	h.cfg.Observer.StorageBytes("put", stored.Size)
	info := artifactInfo{Pages: stats.Pages, Bytes: stored.Size, RenderMS: renderMS, Fence: fence, Renderer: h.cfg.Hostname,
		Warnings: stats.Warnings, WarningsOmitted: stats.WarningsOmitted}
	if err := h.writeInfo(ctx, key, stored.ETag, info); err != nil {
		log.WarnContext(ctx, "writing artifact info failed; readers will count pages themselves", "err", err)
	}
	return spec.Result{
		ArtifactKey: stored.Key, URL: stored.URL, ETag: stored.ETag, Bytes: stored.Size, Pages: stats.Pages,
		Rendered: true, FailOpen: failOpen, RenderMS: renderMS, WaitedMS: waited.Milliseconds(),
		Warnings: stats.Warnings, WarningsOmitted: stats.WarningsOmitted,
	}, nil
}

// source fetches a document named by reference. A document that is gone is
// bad input (never retried); a Redis error is not.
func (h *Handler) source(ctx context.Context, ref spec.HTMLRef) (string, error) {
	if h.cfg.Sources == nil {
		return "", &spec.FieldError{Field: "source.html_ref", Rule: "this worker has no store of source documents"}
	}
	html, err := h.cfg.Sources.Get(ctx, ref)
	if errors.Is(err, htmlstore.ErrMissing) {
		return "", &spec.FieldError{Field: "source.html_ref", Rule: fmt.Sprintf(
			"the source document (sha256 %s) is gone: it expired before the export ran, or was deleted; enqueue the export again", ref.SHA256)}
	}
	return html, err
}

// releaseSource drops the task's reference to its source document once the
// task is final: done, failed for good, or failed on its last attempt.
func (h *Handler) releaseSource(ctx context.Context, log *slog.Logger, ref spec.HTMLRef, err error) {
	if h.cfg.Sources == nil {
		return
	}
	if !final(ctx, err) {
		return // another attempt will read it
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.cfg.Sources.Release(rctx, ref); err != nil {
		log.WarnContext(ctx, "releasing the source document failed; its TTL removes it", "sha256", ref.SHA256, "err", err)
	}
}

// credentials fetches per-export credentials named by reference. Ones that
// are gone are bad input (never retried); a Redis error is not.
func (h *Handler) credentials(ctx context.Context, ref spec.CredentialsRef) (credstore.Credentials, error) {
	if h.cfg.Credentials == nil {
		return credstore.Credentials{}, &spec.FieldError{Field: "source.credentials_ref", Rule: "this worker has no store of source credentials"}
	}
	c, err := h.cfg.Credentials.Get(ctx, ref)
	if errors.Is(err, credstore.ErrMissing) {
		return c, &spec.FieldError{Field: "source.credentials_ref", Rule: "the export's credentials are gone: they expired (SOURCE_TTL) before the export ran, or the export was final already; enqueue it again"}
	}
	return c, err
}

// releaseCredentials deletes the task's credentials once the task is final.
func (h *Handler) releaseCredentials(ctx context.Context, log *slog.Logger, ref spec.CredentialsRef, err error) {
	if h.cfg.Credentials == nil || !final(ctx, err) {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.cfg.Credentials.Release(rctx, ref); err != nil {
		log.WarnContext(ctx, "deleting the source credentials failed; their TTL removes them", "err", err)
	}
}

// taskIDMeta is the artifact metadata naming the task that stored it.
const taskIDMeta = "task-id"

// storedBy reports whether obj was stored by the task of ctx (an earlier
// attempt of it).
func storedBy(ctx context.Context, obj storage.Object) bool {
	id, ok := asynq.GetTaskID(ctx)
	return ok && id != "" && obj.Metadata[taskIDMeta] == id
}

func (h *Handler) reuse(ctx context.Context, key string, obj storage.Object, waited time.Duration, failOpen bool, failOn spec.FailOn) (spec.Result, error) {
	info, err := h.describe(ctx, key, obj)
	if err != nil {
		return spec.Result{}, err
	}
	// The options fail on the warnings of the artifact, whichever render
	// made it: a request that asks for a complete PDF never gets one that
	// a render without the option stored with its images missing.
	unlisted := 0 // the kinds of warnings beyond the list are not kept
	if failOn.ResourceErrors && failOn.ConsoleErrors {
		unlisted = info.WarningsOmitted
	}
	if err := render.PageErrors(failOn, info.Warnings, unlisted); err != nil {
		return spec.Result{}, fmt.Errorf("the stored artifact %s: %w (export again with force once the page is fixed): %w", obj.Key, err, asynq.SkipRetry)
	}
	return spec.Result{
		ArtifactKey: obj.Key, URL: obj.URL, ETag: obj.ETag, Bytes: obj.Size, Pages: info.Pages,
		// The task that rendered it says so, on whichever attempt it reads it.
		Rendered: storedBy(ctx, obj), FailOpen: failOpen, WaitedMS: waited.Milliseconds(),
		Warnings: info.Warnings, WarningsOmitted: info.WarningsOmitted,
	}, nil
}

// lockID names the render mutex of an artifact: a fixed-length hash, so
// Redis keys stay short whatever the manual id and storage location.
func (h *Handler) lockID(key string) string {
	sum := sha256.Sum256([]byte(h.cfg.Namespace + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// confirmAtEOF passes a stream through and, before reporting its end,
// confirms the render lease; if the lease was lost the reader fails instead,
// and the store aborts the upload.
type confirmAtEOF struct {
	r       io.Reader
	confirm func() error
	err     error
}

func (c *confirmAtEOF) Read(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(b)
	if err == io.EOF {
		if cerr := c.confirm(); cerr != nil {
			c.err = fmt.Errorf("render lease not confirmed at the end of the stream: %w", cerr)
			return n, c.err
		}
	}
	return n, err
}
