package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// finishTimeout bounds the Redis work of finishing an export, which runs
// even when the task's own context is over.
const finishTimeout = 5 * time.Second

// end is the last step of every attempt: classify decides its outcome,
// once, and when the export ends with it, it is finished through
// Config.Finisher, the one place that records the final state, releases
// what the task owns, announces it and enqueues the callback. It returns the
// attempt's error as asynq should see it: an attempt stopped by a cancel
// request is final, never retried.
func (h *Handler) end(ctx context.Context, log *slog.Logger, taskID string, env *spec.Envelope, res *spec.Result, err error) error {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	o := classify(attempt{ctx: ctx, err: err, retried: retried, maxRetry: maxRetry,
		marked: func() bool { return h.cancelMarked(ctx, taskID) }})
	if o == verdictCanceled && !errors.Is(err, ErrCanceled) {
		err = fmt.Errorf("%w: %w", ErrCanceled, asynq.SkipRetry)
		log.InfoContext(ctx, "export canceled by request")
	}
	if !o.final() {
		return err // another attempt follows and needs what the task owns
	}
	h.finish(ctx, log, taskID, env, finalOf(taskID, env, res, o, err))
	return err
}

// finalOf is the final state an attempt that ended with err, judged o,
// leaves.
func finalOf(taskID string, env *spec.Envelope, res *spec.Result, o verdict, err error) spec.Final {
	f := spec.Final{TaskID: taskID, State: o.state()}
	if env != nil {
		f.ManualID, f.Version, f.RequestID = env.ManualID, env.Version, env.RequestID
	}
	switch o {
	case verdictCompleted:
		f.Result = res
	case verdictCanceled:
		f.Error = spec.CanceledError
	default:
		f.Error, f.Kind, f.Detail = err.Error(), failureKind(err), failureDetail(err)
	}
	return f
}

// finish hands a final export to the Finisher. A failure is logged, never
// turned into a retry: the export's outcome does not change because
// announcing it failed (what the task stored expires with its TTL, waiters
// fall back to polling).
func (h *Handler) finish(ctx context.Context, log *slog.Logger, taskID string, env *spec.Envelope, f spec.Final) {
	if h.cfg.Finisher == nil || taskID == "" {
		return
	}
	f.Retried, _ = asynq.GetRetryCount(ctx)
	queue, _ := asynq.GetQueueName(ctx)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	done, err := h.cfg.Finisher.Finish(rctx, queue, env, f)
	if err != nil {
		log.ErrorContext(ctx, "finishing the export failed; what it stored expires with its TTL, waiters fall back to polling",
			"state", f.State, "recorded", done.Recorded, "err", redact.Error(err))
		return
	}
	if !done.Recorded {
		log.InfoContext(ctx, "export was finished already", "state", done.Final.State, "attempt_state", f.State)
	}
}

// finalAlready reports a final state recorded for the task (by a cancel, an
// earlier attempt, the sweep of archived tasks): then there is nothing to do.
// A Redis error answers no: the attempt runs, and Finish, which records
// once, keeps the first outcome.
func (h *Handler) finalAlready(ctx context.Context, taskID string) (spec.Final, bool) {
	if h.cfg.Finisher == nil || taskID == "" {
		return spec.Final{}, false
	}
	f, ok, err := h.cfg.Finisher.Recorded(ctx, taskID)
	return f, err == nil && ok
}

// canceledBeforeStart: a task canceled while asynq was handing it to us
// (after the canceller saw it pending, before our cancel function existed).
// It defers to the result an earlier attempt stored (the record is read
// before, finalAlready): a cancel that lands as an attempt completes leaves
// the task archived with the cancel mark and that result, and an export
// with a result is completed; it returns the result then. A Redis error
// answers not canceled: the attempt runs, and Finish keeps the first outcome.
func (h *Handler) canceledBeforeStart(ctx context.Context, taskID string) (bool, *spec.Result) {
	if h.cfg.Cancellations == nil || taskID == "" {
		return false, nil
	}
	c, err := h.cfg.Cancellations.Canceled(ctx, taskID)
	if err != nil || !c {
		return false, nil
	}
	queue, _ := asynq.GetQueueName(ctx)
	if r, err := h.cfg.Cancellations.StoredResult(ctx, queue, taskID); err == nil && r != nil {
		return false, r
	}
	return true, nil
}

// cancelMarked reports whether a cancel request is recorded for the task;
// classify asks only when asynq canceled its context (not a deadline, not
// the worker's shutdown). A Redis error answers no.
func (h *Handler) cancelMarked(ctx context.Context, taskID string) bool {
	if h.cfg.Cancellations == nil || taskID == "" {
		return false
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	c, err := h.cfg.Cancellations.Canceled(rctx, taskID)
	return err == nil && c
}
