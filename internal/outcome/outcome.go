// Package outcome tells the world that an export is final (completed, failed
// for good, canceled): it announces the outcome on the queue Redis, where
// waiting clients (exportclient.Wait, the HTTP long-poll) wake on it, and
// enqueues the export's callback as its own durable pdf:callback task. The
// worker reports every final export through it; exportclient reports the
// exports it cancels before a worker took them.
//
// Announcements go to one sharded pub/sub channel (SPUBLISH, Redis ≥ 7.0, on
// every topology, like the render gate's releases) carrying the whole
// outcome, so a waiter needs no read after it wakes. Pub/sub is not durable:
// a waiter that was disconnected when it was sent falls back to polling.
package outcome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/propagation"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Channel is the sharded pub/sub channel of final outcomes.
const Channel = "pdfexport:final"

// FinalKey holds the announced outcome of a task for FinalTTL: the worker
// announces before asynq records the task's final state, so a waiter that
// subscribed just after the announcement, and then read the state, reads
// this key to learn what it missed.
func FinalKey(taskID string) string { return "pdfexport:final:" + taskID }

// FinalTTL bounds how long FinalKey stays: the announcement's race window
// is milliseconds; minutes cover a Redis blip between the two writes.
const FinalTTL = 5 * time.Minute

// CancelKey marks an export as canceled by request; the worker running it
// checks it when its context is canceled, and status readers when asynq
// shows the task archived.
func CancelKey(taskID string) string { return "pdfexport:cancel:" + taskID }

// CallbackTaskID is the asynq task id of an export's callback, which is also
// its Pdfexport-Delivery id: the same export gets one callback task however
// often its final step runs (asynq refuses a second task with the id).
func CallbackTaskID(exportTaskID string) string { return "callback-" + exportTaskID }

// Reporter publishes final outcomes and enqueues callbacks.
type Reporter struct {
	RDB    redis.UniversalClient // the queue Redis
	Client *asynq.Client         // enqueues pdf:callback tasks on the same Redis
	// CallbackMaxRetry is the callback task's retries (CALLBACK_MAX_RETRY).
	CallbackMaxRetry int
	// Retention keeps a delivered callback task (and so its id) readable.
	Retention time.Duration
}

// Final records and announces f and, when cb names a URL, enqueues its
// delivery on queue. The announcement is best-effort (waiters poll too); the callback is
// not: its error is returned, so the caller can retry or log it.
func (r Reporter) Final(ctx context.Context, queue string, f spec.Final, cb *spec.Callback) error {
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("outcome: encoding: %w", err)
	}
	var errs []error
	if _, err := r.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, FinalKey(f.TaskID), body, FinalTTL)
		p.SPublish(ctx, Channel, body)
		return nil
	}); err != nil {
		errs = append(errs, fmt.Errorf("announcing %s: %w", f.TaskID, err))
	}
	if cb != nil && cb.URL != "" {
		errs = append(errs, r.enqueueCallback(ctx, queue, f.TaskID, cb.URL, body))
	}
	return errors.Join(errs...)
}

func (r Reporter) enqueueCallback(ctx context.Context, queue, taskID, url string, body []byte) error {
	id := CallbackTaskID(taskID)
	ct := spec.CallbackTask{URL: url, Delivery: id, Body: body}
	// The export's trace context, when ctx has one: the delivery continues
	// the trace (tracing off and none received: nothing is written).
	tc := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, tc)
	ct.Traceparent, ct.Tracestate = tc["traceparent"], tc["tracestate"]
	payload, err := json.Marshal(ct)
	if err != nil {
		return fmt.Errorf("outcome: encoding callback: %w", err)
	}
	opts := []asynq.Option{asynq.TaskID(id), asynq.MaxRetry(r.CallbackMaxRetry), asynq.Timeout(2 * time.Minute)}
	if queue != "" {
		opts = append(opts, asynq.Queue(queue))
	}
	if r.Retention > 0 {
		opts = append(opts, asynq.Retention(r.Retention))
	}
	_, err = r.Client.EnqueueContext(ctx, asynq.NewTask(spec.CallbackTaskType, payload), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil // enqueued already, by an earlier run of this final step
	}
	if err != nil {
		return fmt.Errorf("enqueueing the callback of %s: %w", taskID, err)
	}
	return nil
}

// Cancels reads and writes the cancel markers on the queue Redis.
type Cancels struct{ RDB redis.UniversalClient }

// Mark records that taskID is canceled by request, for ttl (at least the
// task's retention, so status readers tell canceled from failed).
func (c Cancels) Mark(ctx context.Context, taskID string, ttl time.Duration) error {
	return c.RDB.Set(ctx, CancelKey(taskID), "1", ttl).Err()
}

// Canceled reports whether taskID was canceled by request.
func (c Cancels) Canceled(ctx context.Context, taskID string) (bool, error) {
	n, err := c.RDB.Exists(ctx, CancelKey(taskID)).Result()
	return n > 0, err
}

// Announced returns the outcome recorded for taskID, if any (see FinalKey).
func Announced(ctx context.Context, rdb redis.UniversalClient, taskID string) (spec.Final, bool, error) {
	b, err := rdb.Get(ctx, FinalKey(taskID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return spec.Final{}, false, nil
	}
	if err != nil {
		return spec.Final{}, false, err
	}
	var f spec.Final
	if err := json.Unmarshal(b, &f); err != nil {
		return spec.Final{}, false, fmt.Errorf("outcome: %s: %w", FinalKey(taskID), err)
	}
	return f, true, nil
}
