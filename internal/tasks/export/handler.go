package export

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/redact"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/sidestore"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// ErrStoredButMissing: a holder announced a stored artifact that storage
// does not have (storage lost it, or workers disagree on STORAGE_URL).
var ErrStoredButMissing = errors.New("tasks: artifact announced as stored is missing from storage")

// maxGatePasses bounds how often a task goes back to the gate after a
// holder failed or vanished, so a poisoned key cannot spin a worker forever.
const maxGatePasses = 5

// job is an envelope and the secrets its references resolved to.
type job struct {
	spec.Envelope
	auth      spec.Credentials
	passwords spec.Passwords // options.encryption's, from encryption_ref
	// markAnchors: a chapter of a manual, printed with its anchor marks.
	markAnchors bool
	// session: a chapter's, the manual's task: the chapters of one manual
	// export may print in one browser context (render.Source.Session).
	session string
	// manual: a manual whose chapters are stored; its "render" assembles
	// them (manual.go).
	manual *manualPlan
	// stored is what storage answered for the job's key moments ago (a
	// manual's look-up of its chapters), so the export does not ask again.
	stored *storage.Object
	// document is the source document beside the task, owned (resolve
	// checked) but not read yet: only a render reads it (loadDocument).
	document *spec.HTMLRef
}

// ProcessTask implements asynq.Handler.
func (h *Handler) ProcessTask(ctx context.Context, t *asynq.Task) (rerr error) {
	start := time.Now()
	taskID, _ := asynq.GetTaskID(ctx)
	log := h.cfg.Logger.With("task_id", taskID)
	env, err := spec.DecodeEnvelope(t.Payload())
	var res *spec.Result
	ctx, span := startExport(ctx, taskID, env, err)
	defer func() { endExport(span, res, rerr) }() // after the finish below
	if f, ok := h.finalAlready(ctx, taskID); ok {
		// A dashboard "Run" of an archived task, or a retry of one stopped
		// by a cancel: the export is over, and what it owned is gone.
		log.InfoContext(ctx, "export is final already; nothing to do", "state", f.State)
		return fmt.Errorf("export %s is %s already (enqueue it again to export anew): %w", taskID, f.State, asynq.SkipRetry)
	}
	var owned *spec.Envelope // names what the task stored beside itself, for Finish
	switch {
	case err == nil:
		owned = &env
	case errors.Is(err, spec.ErrNewerEnvelope):
		// Refused for good, but its record and callback say so; what it
		// stored beside itself is a newer version's, left to its TTL.
		newer := spec.NewerOutcome(t.Payload(), h.cfg.Hosts)
		owned = &newer
	}
	defer func() { rerr = h.end(ctx, log, taskID, owned, res, rerr) }()
	if canceled, stored := h.canceledBeforeStart(ctx, taskID); stored != nil {
		log.InfoContext(ctx, "export completed in an earlier attempt, before its cancel; completing it with that result")
		res = stored
		return nil
	} else if canceled {
		return fmt.Errorf("%w: %w", ErrCanceled, asynq.SkipRetry)
	}
	var j job
	if err == nil {
		j, err = h.resolve(ctx, taskID, env)
		if err != nil && !errors.Is(err, spec.ErrInvalid) {
			h.cfg.Observer.ExportDone("failed", time.Since(start))
			log.WarnContext(ctx, "reading what the export stored beside itself failed; retrying", "err", err)
			return err
		}
	}
	if err != nil {
		err = redact.Error(err)
		log.WarnContext(ctx, "export rejected", "field", spec.FirstField(err), "err", err)
		h.cfg.Observer.ExportDone("failed", time.Since(start))
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	var discovered *spec.SiteDiscovery
	if j.Source.Site != nil {
		if j, discovered, err = h.discoverSite(ctx, log, j); err != nil {
			err = redact.Error(err)
			h.cfg.Observer.ExportDone("failed", time.Since(start))
			log.ErrorContext(ctx, "export failed", "err", err, "retryable", !errors.Is(err, asynq.SkipRetry), "ms", time.Since(start).Milliseconds())
			return err
		}
	}
	key := j.ArtifactKey()
	log = log.With("manual_id", env.ManualID, "version", env.Version, "key", key, "request_id", env.RequestID)

	var r spec.Result
	if j.Source.Chapters != nil {
		r, err = h.exportManual(ctx, log, j, key)
	} else {
		r, err = h.export(ctx, log, j, key)
	}
	if err != nil {
		// The error becomes the task's error (the dashboard, status): no
		// password or query value of any URL in it.
		err = redact.Error(err)
		h.cfg.Observer.ExportDone("failed", time.Since(start))
		log.ErrorContext(ctx, "export failed", "err", err, "retryable", !errors.Is(err, asynq.SkipRetry), "ms", time.Since(start).Milliseconds())
		return err
	}
	r.Site = discovered
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
	if h.hooks.afterResult != nil {
		h.hooks.afterResult(ctx, taskID)
	}
	res = &r
	return nil
}

// resolve validates the envelope and reads what it names beside the task
// (sidestore.Refs): per-export credentials and an encryption's passwords;
// of a stored source document it checks that the task owns it, and
// loadDocument reads it when the export renders (an export that finds its
// PDF stored, or waits for another worker's render, never needs it). Only
// data this task stored is read: Redis, not the envelope, says what the
// task owns, so a reference to another export's data fails for good,
// naming the field.
func (h *Handler) resolve(ctx context.Context, taskID string, env spec.Envelope) (job, error) {
	if err := env.Validate(h.cfg.Hosts); err != nil {
		return job{}, err
	}
	j := job{Envelope: env}
	for _, ref := range sidestore.Refs(&env) {
		if ref.Kind() == sidestore.HTML {
			if err := h.owns(ctx, taskID, ref); err != nil {
				return job{}, err
			}
			j.document = ref.HTML
			continue
		}
		v, err := h.beside(ctx, taskID, ref)
		if err != nil {
			return job{}, err
		}
		switch ref.Kind() {
		case sidestore.Credentials:
			j.auth = v.Credentials
		case sidestore.Passwords:
			j.passwords = v.Passwords
		}
	}
	return j, nil
}

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
	taskOwn, _ := asynq.GetTaskID(ctx) // what the task stored beside itself is its own, a chapter's too
	if err := h.loadDocument(ctx, taskOwn, &p); err != nil {
		return spec.Result{}, err
	}
	var s stream // what the sinks did, judged after the render
	settings := p.Options.Settings()
	if p.manual != nil {
		// An assembled manual is tagged only when asked (its chapters
		// are tagged for the outline too): the document options' check
		// must not look for tags it never had.
		settings.Tagged = settings.Structure
	}
	src := render.Source{URL: p.Source.URL, HTML: p.Source.HTML, Auth: p.auth, MarkAnchors: p.markAnchors, Session: p.session}
	if p.markAnchors && spec.ChapterHeadingMarks(p.Options) {
		// A chapter of an untagged manual: its outline comes from its
		// heading marks (spec.ChapterHeadingMarks), so Chromium prints
		// it untagged (settings.Tagged was set for its outline alone).
		settings.Outline, settings.Tagged, src.MarkHeadings = false, false, true
	}
	taskID := ownerTask(ctx) // the sink's context is the renderer's, not the task's
	// upload streams a PDF into storage: Chromium's stream itself, or the
	// post-processed file of an export with document options.
	upload := func(ctx context.Context, pdf io.Reader) error {
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
			s.stored, s.storeErr = h.cfg.Store.Replace(uctx, key, staleETag, pdf, opts)
		} else {
			s.stored, s.storeErr = h.cfg.Store.Create(uctx, key, pdf, opts)
		}
		endUpload(upload, s.stored, s.storeErr)
		if errors.Is(s.storeErr, storage.ErrExists) || staleETag != "" && errors.Is(s.storeErr, storage.ErrPreconditionFailed) {
			// Someone else stored it first (a fail-open duplicate), or
			// replaced the object a forced render meant to replace: storage
			// kept theirs, which is what every reader gets.
			_, _ = io.Copy(io.Discard, pdf)
			return nil
		}
		return s.storeErr
	}
	sink := upload
	if settings.Document != nil {
		sink = func(_ context.Context, pdf io.Reader) error {
			s.spooled, _, s.spoolErr = spool(h.workspace, pdf, settings.Document)
			return s.spoolErr
		}
		defer func() {
			if s.spooled != "" {
				_ = os.Remove(s.spooled)
			}
		}()
	}
	queue, _ := asynq.GetQueueName(ctx)
	h.cfg.Observer.RenderInFlight(queue, 1)
	var stats render.Stats
	var err error
	if p.manual != nil {
		stats, err = h.assembleManual(ctx, p, settings, sink)
	} else {
		stats, err = h.cfg.Renderer.Render(ctx, src, settings, sink)
	}
	h.cfg.Observer.RenderInFlight(queue, -1)
	h.cfg.Observer.RenderWait(queue, stats.QueueWait)
	if err == nil && s.spooled != "" {
		s.postErr = h.uploadPostProcessed(ctx, s.spooled, settings, p.passwords, stats.Pages, upload)
	}
	renderMS := time.Since(started).Milliseconds()
	if err := s.failure(ctx, key, err, p.manual != nil); err != nil {
		return spec.Result{}, err
	}
	if errors.Is(s.storeErr, storage.ErrExists) || errors.Is(s.storeErr, storage.ErrPreconditionFailed) {
		obj, err := h.cfg.Store.Stat(ctx, key)
		if err != nil {
			return spec.Result{}, fmt.Errorf("reading %s after a concurrent store: %w", key, err)
		}
		if obj.ETag == staleETag && staleETag != "" {
			return spec.Result{}, fmt.Errorf("replacing %s: %w", key, s.storeErr) // not replaced after all: retry
		}
		log.InfoContext(ctx, "artifact already stored by another worker; ours discarded", "fail_open", failOpen)
		res, err := h.reuse(ctx, key, obj, waited, failOpen, p.Options.Settings().FailOn)
		res.RenderMS = renderMS
		return res, err
	}
	h.cfg.Observer.StorageBytes("put", s.stored.Size)
	info := artifactInfo{Pages: stats.Pages, Bytes: s.stored.Size, RenderMS: renderMS, Fence: fence, Renderer: h.cfg.Hostname,
		Warnings: stats.Warnings, WarningsOmitted: stats.WarningsOmitted}
	if err := h.writeInfo(ctx, key, s.stored.ETag, info); err != nil {
		log.WarnContext(ctx, "writing artifact info failed; readers will count pages themselves", "err", err)
	}
	res := result(s.stored, info, true, failOpen, waited)
	res.RenderMS = renderMS
	return res, nil
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

// besideRules say, per kind, why data named by reference cannot be read:
// no store, gone, not this task's.
var besideRules = map[sidestore.Kind]struct {
	none           string
	gone, notOwner func(sidestore.Ref) string
}{
	sidestore.HTML: {"this worker has no store of source documents",
		func(r sidestore.Ref) string {
			return fmt.Sprintf("the source document (sha256 %s) is gone: it expired before the export ran, or was deleted; enqueue the export again", r.HTML.SHA256)
		},
		func(r sidestore.Ref) string {
			return fmt.Sprintf("the source document (sha256 %s) was not stored for this export: a task reads only what its enqueuer stored for it", r.HTML.SHA256)
		}},
	sidestore.Credentials: {"this worker has no store of source credentials",
		func(sidestore.Ref) string {
			return "the export's credentials are gone: they expired (SOURCE_TTL) before the export ran, or the export was final already; enqueue it again"
		},
		func(sidestore.Ref) string {
			return "the credentials were not stored for this export: a task reads only what its enqueuer stored for it"
		}},
	sidestore.Passwords: {"this worker has no store of per-export secrets",
		func(sidestore.Ref) string {
			return "the export's passwords are gone: they expired (SOURCE_TTL) before the export ran, or the export was final already; enqueue it again"
		},
		func(sidestore.Ref) string {
			return "the passwords were not stored for this export: a task reads only what its enqueuer stored for it"
		}},
}

// beside reads data named by reference. Data that is gone, is not this
// task's, or is sealed in a way this worker cannot open is bad input (never
// retried), naming the field; a Redis error is not.
func (h *Handler) beside(ctx context.Context, taskID string, ref sidestore.Ref) (sidestore.Value, error) {
	if h.cfg.SideStore == nil {
		return sidestore.Value{}, besideErr(ref, nil)
	}
	v, err := h.cfg.SideStore.Get(ctx, taskID, ref)
	if err != nil {
		return sidestore.Value{}, besideErr(ref, err)
	}
	return v, nil
}

// owns checks, as beside would, that the task owns the data, without
// reading it.
func (h *Handler) owns(ctx context.Context, taskID string, ref sidestore.Ref) error {
	if h.cfg.SideStore == nil {
		return besideErr(ref, nil)
	}
	if err := h.cfg.SideStore.Owns(ctx, taskID, ref); err != nil {
		return besideErr(ref, err)
	}
	return nil
}

// besideErr is the error of reading ref's data that failed with err (nil:
// this worker has no side store): a FieldError when the data cannot be
// had (gone, another task's, sealed for other keys), err itself otherwise.
func besideErr(ref sidestore.Ref, err error) error {
	k := ref.Kind()
	rules := besideRules[k]
	switch {
	case err == nil:
		return &spec.FieldError{Field: k.Field(), Rule: rules.none}
	case errors.Is(err, sidestore.ErrMissing):
		return &spec.FieldError{Field: k.Field(), Rule: rules.gone(ref)}
	case errors.Is(err, sidestore.ErrNotOwner):
		return &spec.FieldError{Field: k.Field(), Rule: rules.notOwner(ref)}
	case errors.Is(err, sidestore.ErrCannotOpen):
		return cannotOpen(k.Field(), k.String(), err)
	}
	return err
}

// loadDocument reads the source document p names beside its task, which
// resolve found the task owns, into p's source: the render's first step.
// A document gone meanwhile (its TTL, a release) fails for good, naming
// the field; a Redis error is retried.
func (h *Handler) loadDocument(ctx context.Context, taskID string, p *job) error {
	if p.document == nil {
		return nil
	}
	v, err := h.beside(ctx, taskID, sidestore.Ref{HTML: p.document})
	if err != nil {
		if errors.Is(err, spec.ErrInvalid) {
			return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		}
		return fmt.Errorf("reading the source document: %w", err)
	}
	p.Source = spec.EnvelopeSource{HTML: v.HTML}
	p.document = nil
	if err := p.Validate(h.cfg.Hosts); err != nil {
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	return nil
}

// cannotOpen is the final error of sealed secrets this worker cannot open:
// no retry opens them (the keys are the process's, the value is Redis's),
// so it is bad input naming the field and why, never the value.
func cannotOpen(field, what string, err error) *spec.FieldError {
	reason := err.Error()
	var oe *sidestore.OpenError
	if errors.As(err, &oe) {
		reason = oe.Reason
	}
	return &spec.FieldError{Field: field, Rule: fmt.Sprintf("the export's %s are sealed and cannot be opened: %s; enqueuers and workers need the same SECRETS_KEY (workers hold every key enqueuers seal with)", what, reason)}
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
