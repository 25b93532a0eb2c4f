package gotenberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// A durable webhook is a task on WebhookQueue, enqueued before the 204:
// it names the conversion's export (enqueued first) and its artifact, or
// an engine route's output (stored first), or the failure to report. The
// process that serves WebhookQueue (bin/api, NewHooks) waits for the
// export, delivers, and retries a delivery the receiver did not take with
// backoff; a restart of that process or of a worker loses nothing, the
// task is in Redis.
const (
	// TypeWebhook is the asynq task type of a delivery.
	TypeWebhook = tasks.TypeGotenbergWebhook
	// WebhookQueue is the queue of the deliveries, which workers do not
	// serve.
	WebhookQueue = tasks.GotenbergWebhookQueue
	// hookMaxRetry is Gotenberg's webhook-max-retry and some more: a
	// restart of the delivering process while it waits costs one.
	hookMaxRetry = 8
	// spoolPrefix is where an engine route's output and a conversion's
	// step files wait for their delivery, in artifact storage, a folder
	// per request that the delivery deletes once it is final
	// (hookspool.go).
	spoolPrefix = "gotenberg-webhooks/"
)

// HookTasks enqueues delivery tasks (asynq.Client).
type HookTasks interface {
	EnqueueContext(ctx context.Context, task *asynq.Task, opts ...asynq.Option) (*asynq.TaskInfo, error)
}

// Spool stores an engine route's output until its delivery reads it
// (storage.Backend).
type Spool interface {
	Create(ctx context.Context, key string, r io.Reader, o storage.PutOptions) (storage.Object, error)
}

// hookTask is a delivery task's payload.
type hookTask struct {
	Hook webhook `json:"hook"`
	// Export is the conversion's export to wait for; empty when Key is
	// stored already.
	Export      string       `json:"export,omitempty"`
	Key         string       `json:"key,omitempty"`
	FileName    string       `json:"file_name"`
	ContentType string       `json:"content_type"`
	Failure     *hookFailure `json:"failure,omitempty"`
	// Steps are a conversion's PDF-engine steps, run on the export's
	// output before the delivery (hooksteps.go).
	Steps *hookSteps `json:"steps,omitempty"`
}

// hookFailure is a failure known before the delivery: its answer.
type hookFailure struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

func (h *handler) durable() bool { return h.cfg.HookTasks != nil && h.cfg.Spool != nil }

// asyncExport answers a conversion with webhook headers: durably, its
// PDF-engine steps' files stored, its export enqueued and then its
// delivery task, and then the 204.
func (h *handler) asyncExport(w http.ResponseWriter, r *http.Request, hk webhook, p exportclient.Payload, f *form, steps []postStep) {
	if !h.durable() {
		h.async(w, r, hk, h.exportResult(r, p, steps))
		return
	}
	ctx := r.Context()
	t := hookTask{Hook: hk, FileName: outputName(r), ContentType: "application/pdf"}
	if len(steps) > 0 {
		var err error
		if t.Steps, err = h.spoolSteps(ctx, f); err != nil {
			h.log.ErrorContext(ctx, "gotenberg: storing the webhook's step files", "trace", hk.Trace, "err", err)
			writeText(w, http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable))
			return
		}
	}
	if key, ok := h.storedOf(ctx, p); ok {
		t.Key = key
	} else {
		job, err := h.enqueue(ctx, r, p)
		if err != nil {
			h.dropSpool(ctx, t)
			writeError(w, err)
			return
		}
		t.Export, t.Key = job.TaskID, job.ArtifactKey
	}
	t.ContentType, t.FileName = answerType(t.Key, t.FileName)
	if err := h.enqueueHook(ctx, t); err != nil {
		if t.Export != "" {
			cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, _ = h.cfg.Queue.Cancel(cctx, t.Export) // nobody would deliver it
			stop()
		}
		h.dropSpool(ctx, t)
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// asyncEngine answers an engine route with webhook headers: durably, the
// job runs now, its output is stored and its delivery task enqueued (a
// failure's too), and then the 204.
func (h *handler) asyncEngine(w http.ResponseWriter, r *http.Request, hk webhook, run func(ctx context.Context) (result, error)) {
	if !h.durable() {
		h.async(w, r, hk, run)
		return
	}
	ctx := r.Context()
	t := hookTask{Hook: hk}
	res, err := run(ctx)
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		status, msg := statusOf(err)
		t.Failure = &hookFailure{Status: status, Message: msg}
	default:
		t.FileName, t.ContentType = res.fileName, res.contentType
		t.Key = spoolPrefix + uuid.NewString() + "/" + res.fileName
		_, err = h.cfg.Spool.Create(ctx, t.Key, res.body, storage.PutOptions{ContentType: res.contentType, FileName: res.fileName})
		res.body.Close()
		if err != nil {
			h.log.ErrorContext(ctx, "gotenberg: storing the webhook's output", "key", t.Key, "err", err)
			h.dropSpool(ctx, t)
			writeText(w, http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable))
			return
		}
	}
	if err := h.enqueueHook(ctx, t); err != nil {
		h.dropSpool(ctx, t)
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// enqueueHook enqueues t's delivery.
func (h *handler) enqueueHook(ctx context.Context, t hookTask) error {
	b, err := json.Marshal(t)
	if err == nil {
		_, err = h.cfg.HookTasks.EnqueueContext(ctx, tasks.NewGotenbergWebhookTask(b),
			asynq.MaxRetry(hookMaxRetry), asynq.Timeout(WebhookWait+time.Minute))
	}
	if err != nil {
		h.log.ErrorContext(ctx, "gotenberg: enqueueing the webhook failed", "trace", t.Hook.Trace, "err", err)
		return &httpError{status: http.StatusServiceUnavailable, msg: http.StatusText(http.StatusServiceUnavailable)}
	}
	h.log.InfoContext(ctx, "gotenberg: webhook queued", "trace", t.Hook.Trace, "export", t.Export, "key", t.Key)
	return nil
}

// NewHooks is the asynq handler of WebhookQueue's deliveries, with cfg's
// queue, storage and webhooks (as New's).
func NewHooks(cfg Config) asynq.Handler { return newHandler(cfg) }

// ProcessTask delivers one webhook: it waits for the export, if any, then
// sends the result, or the failure, to the caller's URLs. A delivery the
// receiver did not take, or that storage or Redis could not serve yet, is
// an error asynq retries with backoff; on the last attempt the failure
// goes to the error URL instead. Once the task is final its spool folder
// is deleted.
func (h *handler) ProcessTask(ctx context.Context, task *asynq.Task) error {
	var t hookTask
	if err := json.Unmarshal(task.Payload(), &t); err != nil || t.Hook.URL == "" {
		return fmt.Errorf("malformed %s payload: %w", TypeWebhook, asynq.SkipRetry)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	last := retried >= maxRetry
	err := h.deliver(ctx, t, last)
	if err == nil || last {
		h.dropSpool(ctx, t)
	}
	return err
}

// deliver is one attempt of t's delivery: nil once it is done, an error
// asynq retries; on the last attempt always nil.
func (h *handler) deliver(ctx context.Context, t hookTask, last bool) error {
	// failed reports a failure; a refusal of the error URL is retried
	// but on the last attempt.
	failed := func(err error) error {
		if ferr := h.deliverFailure(ctx, t.Hook, err); ferr != nil && !last {
			return ferr
		}
		return nil
	}
	if t.Failure != nil {
		return failed(&httpError{status: t.Failure.Status, msg: t.Failure.Message})
	}
	if t.Export != "" {
		if err := h.awaitExport(ctx, t.Export); err != nil {
			var he *httpError
			if errors.As(err, &he) || last {
				return failed(err)
			}
			return err
		}
	}
	res, err := h.openResult(ctx, t.Key, t.FileName)
	if err == nil && t.Steps != nil {
		res, err = h.runStored(ctx, res, t)
		var he *httpError
		if errors.As(err, &he) && he.status < http.StatusInternalServerError {
			return failed(err) // the steps refuse this PDF on every attempt
		}
	} else if err == nil {
		// The task named the answer when it was queued.
		res.contentType, res.fileName = t.ContentType, t.FileName
	}
	if err == nil {
		err = h.deliverResult(ctx, t.Hook, res)
	}
	if err != nil && last {
		return failed(err)
	}
	return err
}

// runStored runs t's steps, read again from the stored form, on res.
func (h *handler) runStored(ctx context.Context, res result, t hookTask) (result, error) {
	steps, err := h.steps(ctx, t.Steps)
	if err != nil {
		res.body.Close()
		return result{}, err
	}
	return h.runSteps(ctx, res, steps, t.FileName)
}

// awaitExport waits for the export: nil once it completed, an *httpError
// (its answer) once it failed or was canceled, another error while it is
// not final or its state cannot be read.
func (h *handler) awaitExport(ctx context.Context, taskID string) error {
	wctx, cancel := context.WithTimeout(ctx, WebhookWait)
	st, err := h.cfg.Queue.Wait(wctx, taskID, time.Second)
	cancel()
	switch {
	case errors.Is(err, exportclient.ErrNotFound):
		return &httpError{status: http.StatusInternalServerError, msg: "The conversion's export is gone (its retention ended)"}
	case err != nil:
		return fmt.Errorf("waiting for export %s: %w", taskID, err)
	case !st.Final():
		return fmt.Errorf("export %s is not final after %s", taskID, WebhookWait)
	case st.State == exportclient.StateCompleted:
		return nil
	case st.State == exportclient.StateCanceled:
		return &httpError{status: http.StatusServiceUnavailable, msg: http.StatusText(http.StatusServiceUnavailable)}
	}
	return failedErr(st)
}
