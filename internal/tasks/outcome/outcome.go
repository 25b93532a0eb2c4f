// Package outcome owns the end of an export. Every way an export becomes
// final (completed, failed for good, canceled at any attempt, archived after
// its retries or by a dashboard action) goes through one function,
// Finisher.Finish, which records the final state once, releases what the
// task stored beside itself (its credentials, its share of a large source
// document), announces the outcome on the queue Redis, where waiting clients
// (exportclient.Wait, the HTTP long-poll) wake on it, and enqueues the
// export's callback as its own durable pdf:callback task: exactly once per
// task, whatever races. The worker's handler, exportclient's Cancel and the
// worker's sweep of archived tasks call it; nothing else does these steps.
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

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/queue/doorbell"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// ArchivedFinalTTL keeps the record of a failed or canceled export as long as
// asynq keeps archived tasks (90 days), so a dashboard "Run" of one finds it.
// A completed export's record stays for the result retention: asynq deletes
// the completed task then, and nothing can run it again; unless the task was
// archived instead (a cancel raced the completion), and then the record is
// kept ArchivedFinalTTL from the archive on (Finish, Sweeper).
const ArchivedFinalTTL = 90 * 24 * time.Hour

// CallbackTaskID is the asynq task id of an export's callback, which is also
// its webhook-id (the delivery id): the same export gets one callback task however
// often its final step runs (asynq refuses a second task with the id).
func CallbackTaskID(exportTaskID string) string { return "callback-" + exportTaskID }

func (r *Finisher) enqueueCallback(ctx context.Context, queue, taskID, url string, body []byte) error {
	id := CallbackTaskID(taskID)
	ct := tasks.Callback{URL: url, Delivery: id, Body: body}
	// The export's trace context, when ctx has one: the delivery continues
	// the trace (tracing off and none received: nothing is written).
	tc := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, tc)
	ct.Traceparent, ct.Tracestate = tc["traceparent"], tc["tracestate"]
	opts := []asynq.Option{asynq.TaskID(id), asynq.MaxRetry(r.CallbackMaxRetry), asynq.Timeout(2 * time.Minute)}
	if queue != "" {
		opts = append(opts, asynq.Queue(queue))
	}
	if r.Retention > 0 {
		opts = append(opts, asynq.Retention(r.Retention))
	}
	t, err := tasks.NewCallbackTask(ct, opts...)
	if err != nil {
		return fmt.Errorf("outcome: %w", err)
	}
	info, err := r.Client.EnqueueContext(ctx, t)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		return nil // enqueued already, by an earlier run of this final step
	}
	if err != nil {
		return fmt.Errorf("enqueueing the callback of %s: %w", taskID, err)
	}
	_ = doorbell.Ring(ctx, r.RDB, info.Queue) // best-effort, as every enqueue's
	return nil
}

// Cancels reads and writes the cancel markers on the queue Redis.
type Cancels struct{ RDB redis.UniversalClient }

// Mark records that taskID is canceled by request, for ttl (at least the
// task's retention, so status readers tell canceled from failed).
func (c Cancels) Mark(ctx context.Context, taskID string, ttl time.Duration) error {
	return c.RDB.Set(ctx, keyspace.Cancel(taskID), "1", ttl).Err()
}

// Canceled reports whether taskID was canceled by request.
func (c Cancels) Canceled(ctx context.Context, taskID string) (bool, error) {
	n, err := c.RDB.Exists(ctx, keyspace.Cancel(taskID)).Result()
	return n > 0, err
}

// StoredResult returns the result an attempt of taskID wrote (asynq keeps it
// on the task, also once archived and when run again), or nil: an export
// with a result completed, whatever cancel came after.
func (c Cancels) StoredResult(ctx context.Context, queue, taskID string) (*spec.Result, error) {
	b, err := c.RDB.HGet(ctx, keyspace.AsynqTask(queue, taskID), keyspace.AsynqTaskResult).Bytes()
	if errors.Is(err, redis.Nil) || err == nil && len(b) == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r spec.Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("outcome: the stored result of %s: %w", taskID, err)
	}
	return &r, nil
}

// Recorded returns the final state recorded for taskID, if any (keyspace.Final).
func Recorded(ctx context.Context, rdb redis.UniversalClient, taskID string) (spec.Final, bool, error) {
	b, err := rdb.Get(ctx, keyspace.Final(taskID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return spec.Final{}, false, nil
	}
	if err != nil {
		return spec.Final{}, false, err
	}
	var f spec.Final
	if err := json.Unmarshal(b, &f); err != nil {
		return spec.Final{}, false, fmt.Errorf("outcome: %s: %w", keyspace.Final(taskID), err)
	}
	return f, true, nil
}
