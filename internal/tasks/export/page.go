package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// ErrStoredButMissing: a holder announced a stored artifact that storage
// does not have (storage lost it, or workers disagree on STORAGE_URL).
var ErrStoredButMissing = errors.New("tasks: artifact announced as stored is missing from storage")

// maxGatePasses bounds how often a task goes back to the gate after a
// holder failed or vanished, so a poisoned key cannot spin a worker forever.
const maxGatePasses = 5

func (h *Handler) export(ctx context.Context, log *slog.Logger, p job, key string) (spec.Result, error) {
	var staleETag string
	var obj storage.Object
	var err error
	if p.stored != nil {
		obj = *p.stored
	} else {
		obj, err = h.cfg.Store.Stat(ctx, key)
	}
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
			return h.renderAndStore(ctx, log, p, target{key: key, staleETag: staleETag, waited: waited})
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
	res, err := h.renderAndStore(lease.Context(), log, p, target{key: key, staleETag: staleETag, lease: lease, waited: waited})
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

// target is where one render goes: the artifact's key, the object a
// forced render replaces (staleETag, "" for none), the lease it renders
// under (nil: fail-open) and how long the task waited at the gate.
type target struct {
	key, staleETag string
	lease          *lock.Lease
	waited         time.Duration
}

// fence is the lease's fencing token, 0 when failing open.
func (t target) fence() int64 {
	if t.lease == nil {
		return 0
	}
	return t.lease.Fence()
}

// renderAndStore renders p and streams it into storage. With a lease, the
// stream's end is held back until the lease is confirmed, so storage (which
// commits only after the last byte) never publishes a render whose lock was
// lost; without one (fail-open), create-only storage keeps the first copy.
func (h *Handler) renderAndStore(ctx context.Context, log *slog.Logger, p job, t target) (spec.Result, error) {
	started := time.Now()
	taskOwn, _ := asynq.GetTaskID(ctx) // what the task stored beside itself is its own, a chapter's too
	if err := h.loadDocument(ctx, taskOwn, &p); err != nil {
		return spec.Result{}, err
	}
	src, settings := p.print()
	var s stream // what the sinks did, judged after the render
	upload := h.uploader(ctx, p, t, &s)
	sink := upload
	if settings.Document != nil {
		sink = s.spool(h.workspace, settings.Document)
		defer s.removeSpooled()
	}
	stats, err := h.print(ctx, p, src, settings, sink)
	if err == nil && s.spooled != "" {
		s.postErr = h.uploadPostProcessed(ctx, s.spooled, settings, p.passwords, stats.Pages, upload)
	}
	renderMS := time.Since(started).Milliseconds()
	if err := s.failure(ctx, t.key, err, p.manual != nil); err != nil {
		return spec.Result{}, err
	}
	if errors.Is(s.storeErr, storage.ErrExists) || errors.Is(s.storeErr, storage.ErrPreconditionFailed) {
		return h.storedByAnother(ctx, log, p, t, s.storeErr, renderMS)
	}
	h.cfg.Observer.StorageBytes("put", s.stored.Size)
	info := artifactInfo{Pages: stats.Pages, Bytes: s.stored.Size, RenderMS: renderMS, Fence: t.fence(), Renderer: h.cfg.Hostname,
		Warnings: stats.Warnings, WarningsOmitted: stats.WarningsOmitted}
	if err := h.writeInfo(ctx, t.key, s.stored.ETag, info); err != nil {
		log.WarnContext(ctx, "writing artifact info failed; readers will count pages themselves", "err", err)
	}
	res := result(s.stored, info, true, t.lease == nil, t.waited)
	res.RenderMS = renderMS
	return res, nil
}

// print runs the render of p, or a manual's assembly, streaming it to
// sink, and counts it as in flight on the task's queue.
func (h *Handler) print(ctx context.Context, p job, src render.Source, settings spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	queue, _ := asynq.GetQueueName(ctx)
	h.cfg.Observer.RenderInFlight(queue, 1)
	defer h.cfg.Observer.RenderInFlight(queue, -1)
	var stats render.Stats
	var err error
	if p.manual != nil {
		stats, err = h.assembleManual(ctx, p, settings, sink)
	} else {
		stats, err = h.cfg.Renderer.Render(ctx, src, settings, sink)
	}
	h.cfg.Observer.RenderWait(queue, stats.QueueWait)
	return stats, err
}

// uploader returns the sink that streams a PDF into storage under t:
// Chromium's stream itself, or the post-processed file of an export with
// document options. What storage answered is left in s.
func (h *Handler) uploader(ctx context.Context, p job, t target, s *stream) func(context.Context, io.Reader) error {
	taskID := ownerTask(ctx) // the sink's context is the renderer's, not the task's
	return func(rctx context.Context, pdf io.Reader) error {
		mediaType, ext := spec.ArtifactType(t.key)
		opts := storage.PutOptions{
			FileName:    p.ManualID + "-" + p.Version + ext,
			ContentType: mediaType,
			Metadata: map[string]string{
				"manual-id":    p.ManualID,
				"version":      p.Version,
				"options-hash": p.ContentHash()[:16],
				"renderer":     h.cfg.Hostname,
				"fence":        strconv.FormatInt(t.fence(), 10),
			},
		}
		if taskID != "" {
			opts.Metadata[taskIDMeta] = taskID
		}
		if t.lease != nil {
			pdf = &confirmAtEOF{r: pdf, confirm: func() error { return t.lease.Confirm(ctx) }}
		}
		uctx, upload := startUpload(rctx, t.key, t.staleETag != "")
		if t.staleETag != "" {
			s.stored, s.storeErr = h.cfg.Store.Replace(uctx, t.key, t.staleETag, pdf, opts)
		} else {
			s.stored, s.storeErr = h.cfg.Store.Create(uctx, t.key, pdf, opts)
		}
		endUpload(upload, s.stored, s.storeErr)
		if errors.Is(s.storeErr, storage.ErrExists) || t.staleETag != "" && errors.Is(s.storeErr, storage.ErrPreconditionFailed) {
			// Someone else stored it first (a fail-open duplicate), or
			// replaced the object a forced render meant to replace: storage
			// kept theirs, which is what every reader gets.
			_, _ = io.Copy(io.Discard, pdf)
			return nil
		}
		return s.storeErr
	}
}

// storedByAnother is the result of a render whose copy storage refused
// with storeErr because another worker stored the artifact first: theirs,
// reused; unless a forced render's object was not replaced after all,
// which is retried.
func (h *Handler) storedByAnother(ctx context.Context, log *slog.Logger, p job, t target, storeErr error, renderMS int64) (spec.Result, error) {
	obj, err := h.cfg.Store.Stat(ctx, t.key)
	if err != nil {
		return spec.Result{}, fmt.Errorf("reading %s after a concurrent store: %w", t.key, err)
	}
	if obj.ETag == t.staleETag && t.staleETag != "" {
		return spec.Result{}, fmt.Errorf("replacing %s: %w", t.key, storeErr)
	}
	log.InfoContext(ctx, "artifact already stored by another worker; ours discarded", "fail_open", t.lease == nil)
	res, err := h.reuse(ctx, t.key, obj, t.waited, t.lease == nil, p.Options.Settings().FailOn)
	res.RenderMS = renderMS
	return res, err
}

// stream is what a render's sinks did: storage's answer, and the spooled
// PDF of an export with document options and its post-processing.
type stream struct {
	stored   storage.Object
	storeErr error // storage's own error; ErrExists: another copy was kept
	spooled  string
	spoolErr error
	postErr  error // post-processing the spooled PDF and uploading it
}

// spool is the sink of an export with document options: it spools the
// PDF into the workspace for post-processing.
func (s *stream) spool(ws *Workspace, d *spec.DocumentSettings) func(context.Context, io.Reader) error {
	return func(_ context.Context, pdf io.Reader) error {
		s.spooled, _, s.spoolErr = spool(ws, pdf, d)
		return s.spoolErr
	}
}

// removeSpooled removes the spooled PDF, if any.
func (s *stream) removeSpooled() {
	if s.spooled != "" {
		_ = os.Remove(s.spooled)
	}
}

// failure is the error a render that ended with renderErr leaves, given
// what its sinks did, or nil when it stored (or found stored) the PDF. The
// order names which failure is the cause; whether the render's own is final
// is classify's.
func (s *stream) failure(ctx context.Context, key string, renderErr error, manual bool) error {
	pe := (*fs.PathError)(nil)
	switch {
	case s.postErr != nil && s.storeErr != nil: // storage failed on its own: retry
		return fmt.Errorf("storing %s: %w", key, s.storeErr)
	case s.postErr != nil: // final (SkipRetry) unless ctx ended: postProcessed's
		return fmt.Errorf("rendering %s: %w", key, s.postErr)
	case errors.Is(s.spoolErr, errTooLarge):
		return fmt.Errorf("rendering %s: %w: %w", key, s.spoolErr, asynq.SkipRetry)
	case errors.As(s.spoolErr, &pe):
		// The temporary file failed (a full or unwritable TMPDIR), not the
		// document: retry, like a storage failure.
		return fmt.Errorf("spooling %s for its document options: %w", key, s.spoolErr)
	case renderErr == nil:
		return nil
	case s.storeErr != nil && errors.Is(renderErr, render.ErrSink):
		// The sink (storage) failed on its own: retry. A stream that failed
		// under the sink (a PDF over a limit, a crashed browser) fails the
		// store too, but the render's error is the cause.
		return fmt.Errorf("storing %s: %w", key, s.storeErr)
	case manual:
		// The assembly marks what is final itself (a limit, a chapter it
		// cannot read); the rest (storage, the disk) is retried.
		return fmt.Errorf("assembling %s: %w", key, renderErr)
	case classify(attempt{ctx: ctx, err: renderErr, pageFault: !render.Retryable(renderErr), maxRetry: notCounted}) == verdictFailed:
		// Only a failure the page itself caused (HTTP 404, a blocked
		// source, a PDF over a limit) while our context ran is final; a
		// render stopped by it (lease lost, task deadline, shutdown) says
		// nothing about the document.
		return fmt.Errorf("rendering %s: %w: %w", key, renderErr, asynq.SkipRetry)
	}
	return fmt.Errorf("rendering %s: %w", key, renderErr)
}

// taskIDMeta is the artifact metadata naming the task that stored it.
const taskIDMeta = "task-id"

// storedBy reports whether obj was stored by the task of ctx (an earlier
// attempt of it, or a chapter task of the manual ctx renders for).
func storedBy(ctx context.Context, obj storage.Object) bool {
	id := ownerTask(ctx)
	return id != "" && obj.Metadata[taskIDMeta] == id
}

type ownerKey struct{}

// forManual makes what ctx stores the manual task's: a chapter task
// stores its chapter for the manual that queued it, which then counts it
// as rendered, not reused.
func forManual(ctx context.Context, manualTask string) context.Context {
	return context.WithValue(ctx, ownerKey{}, manualTask)
}

// ownerTask is the task what ctx stores belongs to: the manual's, for a
// chapter task; else the task of ctx.
func ownerTask(ctx context.Context) string {
	if id, ok := ctx.Value(ownerKey{}).(string); ok {
		return id
	}
	id, _ := asynq.GetTaskID(ctx)
	return id
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
	// The task that rendered it says so, on whichever attempt it reads it.
	return result(obj, info, storedBy(ctx, obj), failOpen, waited), nil
}

// result is the result document of an export whose artifact is obj, as info
// describes it: the one place a result is assembled.
func result(obj storage.Object, info artifactInfo, rendered, failOpen bool, waited time.Duration) spec.Result {
	return spec.Result{
		ArtifactKey: obj.Key, URL: obj.URL, ETag: obj.ETag, Bytes: obj.Size, Pages: info.Pages,
		Rendered: rendered, FailOpen: failOpen, WaitedMS: waited.Milliseconds(),
		Warnings: info.Warnings, WarningsOmitted: info.WarningsOmitted,
	}
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

// uploadPostProcessed post-processes the spooled render at in with the
// document options of s and streams the output into storage with upload.
// An error from upload itself is reported through upload's storeErr.
func (h *Handler) uploadPostProcessed(ctx context.Context, in string, s spec.PrintSettings, pw spec.Passwords, pages int, upload func(context.Context, io.Reader) error) error {
	out, err := h.postProcessed(ctx, in, s, pw, pages)
	if err != nil {
		return err
	}
	defer os.Remove(out)
	f, err := os.Open(out)
	if err != nil {
		return err
	}
	defer f.Close()
	return upload(ctx, f)
}
