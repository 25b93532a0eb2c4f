package export

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
)

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
	sidestore.PageSecrets: {"this worker has no store of per-export secrets",
		func(sidestore.Ref) string {
			return "the export's page headers and cookies are gone: they expired (SOURCE_TTL) before the export ran, or the export was final already; enqueue it again"
		},
		func(sidestore.Ref) string {
			return "the page headers and cookies were not stored for this export: a task reads only what its enqueuer stored for it"
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
