package export

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// ChapterTasks returns the handler of pdf:chapter tasks: a chapter a
// manual queued for the fleet, printed through the gate like any export
// and counted in the manual's progress. One whose manual is final already
// (completed, failed, canceled) ends at once. A chapter that fails for
// good is not retried: the manual's task meets the same failure and fails
// naming it.
func (h *Handler) ChapterTasks() asynq.Handler { return asynq.HandlerFunc(h.processChapter) }

func (h *Handler) processChapter(ctx context.Context, t *asynq.Task) error {
	taskID, _ := asynq.GetTaskID(ctx)
	log := h.cfg.Logger.With("task_id", taskID)
	ct, err := spec.DecodeChapterTask(t.Payload())
	if err != nil {
		return fmt.Errorf("%w: %w", redact.Error(err), asynq.SkipRetry)
	}
	env := ct.Manual()
	if err := env.Validate(h.cfg.Hosts); err != nil {
		return fmt.Errorf("%w: %w", redact.Error(err), asynq.SkipRetry)
	}
	log = log.With("manual_task", ct.ManualTask, "chapter", ct.Index, "manual_id", ct.ManualID, "version", ct.Version)
	if why := h.manualEnded(ctx, ct.ManualTask); why != "" {
		log.InfoContext(ctx, "the manual's chapter is not needed", "because", why)
		return nil
	}
	key := env.ChapterKey(0)
	ctx, stop := h.whileManualRuns(forManual(ctx, ct.ManualTask), ct.ManualTask)
	defer stop()
	if _, err := h.export(ctx, log.With("chapter_key", key), chapterJob(ct.Manual(), 0, ct.ManualTask), key); err != nil {
		if errors.Is(context.Cause(ctx), errManualEnded) {
			// Its render stopped and released the chapter's lock as
			// failed: another manual that needs the chapter takes it over.
			log.InfoContext(ctx, "the manual ended while its chapter printed; stopped")
			return nil
		}
		return redact.Error(err)
	}
	h.chapterStored(ctx, log, ct.ManualTask, key)
	return nil
}

// errManualEnded: the manual a chapter task printed for became final
// (canceled, failed) while it printed.
var errManualEnded = errors.New("the manual ended")

// manualCheckInterval is how often a chapter task looks whether its
// manual ended (one or two Redis reads each time per running chapter);
// manualCheckIntervalWatched is the same with Config.Outcomes, whose
// announcement ends the chapter at once, the look only catching a lost
// announcement.
const (
	manualCheckInterval        = time.Second
	manualCheckIntervalWatched = 10 * time.Second
)

// manualEnded says why a manual no longer needs its chapters ("" while it
// runs): final already, or canceled. A Redis error answers "": the
// chapter is printed, which costs at worst a render.
func (h *Handler) manualEnded(ctx context.Context, manualTask string) string {
	if h.cfg.Finisher != nil {
		if f, ok, err := h.cfg.Finisher.Recorded(ctx, manualTask); err == nil && ok {
			return "the manual is " + string(f.State)
		}
	}
	if c := h.cfg.Cancellations; c != nil {
		if canceled, err := c.Canceled(ctx, manualTask); err == nil && canceled {
			return "the manual was canceled"
		}
	}
	return ""
}

// whileManualRuns returns ctx canceled with errManualEnded once the manual
// ends, so that a chapter of a canceled manual stops printing; stop ends
// the watch and waits for it.
func (h *Handler) whileManualRuns(ctx context.Context, manualTask string) (context.Context, func()) {
	if h.cfg.Finisher == nil && h.cfg.Cancellations == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	interval := manualCheckInterval
	var announced <-chan spec.Final
	unwatch := func() {}
	if h.cfg.Outcomes != nil {
		if w, err := h.cfg.Outcomes.Watch(manualTask); err == nil {
			announced, interval, unwatch = w.C(), manualCheckIntervalWatched, w.Stop
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-announced:
				cancel(errManualEnded)
				return
			case <-t.C:
				if h.manualEnded(ctx, manualTask) != "" {
					cancel(errManualEnded)
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
		unwatch()
	}
}
