package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
)

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
			return h.failed(ctx, log, start, err)
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
		return h.failed(ctx, log, start, err)
	}
	r.Site = discovered
	if err := h.complete(ctx, log, t, taskID, start, &r); err != nil {
		return err
	}
	res = &r
	return nil
}

// failed logs and counts an attempt that failed with err and returns it
// redacted: it becomes the task's error (the dashboard, status), with no
// password or query value of any URL in it.
func (h *Handler) failed(ctx context.Context, log *slog.Logger, start time.Time, err error) error {
	err = redact.Error(err)
	h.cfg.Observer.ExportDone("failed", time.Since(start))
	log.ErrorContext(ctx, "export failed", "err", err, "retryable", !errors.Is(err, asynq.SkipRetry), "ms", time.Since(start).Milliseconds())
	return err
}

// complete logs and counts an attempt that ended with r and writes r as
// the task's result.
func (h *Handler) complete(ctx context.Context, log *slog.Logger, t *asynq.Task, taskID string, start time.Time, r *spec.Result) error {
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
		case sidestore.PageSecrets:
			// The key hashes the reference's identity, not these values.
			j.Options.Page = j.Options.Page.WithSecrets(v.PageSecrets)
		}
	}
	return j, nil
}
