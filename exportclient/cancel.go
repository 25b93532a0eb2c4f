package exportclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
)

// ErrFinal: the export is final already (completed, failed, canceled), so
// there is nothing to cancel. Cancel returns it with the export's Status.
var ErrFinal = errors.New("exportclient: export is final already")

// canceledMessage is the error of a canceled export.
const canceledMessage = spec.CanceledError

// cancelMarkerTTL keeps the mark as long as asynq keeps archived tasks
// (90 days), so status never turns a canceled export into a failed one.
const cancelMarkerTTL = 90 * 24 * time.Hour

// stopWait bounds how long Cancel waits for a running export to stop.
const stopWait = 10 * time.Second

// Cancel cancels an export. One that no worker has taken (pending,
// scheduled, waiting for a retry) is archived at once and is canceled when
// Cancel returns: it is finished here (what it stored beside itself is
// released, its callback, if any, is enqueued, waiters wake). One that is
// running is told to stop: its render stops, its render lock is released as
// failed (a duplicate waiting for it takes over), nothing is stored, and its
// worker finishes it as canceled, at any attempt; Cancel waits up to 10 s
// (or ctx) for that and returns the state it saw, which may still be
// active, or completed if it finished first. A final export gives ErrFinal.
func (c *Client) Cancel(ctx context.Context, taskID string) (Status, error) {
	if isStored(taskID) {
		s, _, err := c.storedStatus(ctx, taskID)
		if err != nil {
			return s, err
		}
		return s, fmt.Errorf("%w: %s is %s", ErrFinal, taskID, s.State)
	}
	info, err := c.taskInfo(ctx, taskID)
	if err != nil {
		return Status{}, err
	}
	if s, err := c.statusOf(ctx, info); err != nil || s.Final() {
		return s, errors.Join(err, fmt.Errorf("%w: %s is %s", ErrFinal, taskID, s.State))
	}
	// Mark first: a worker that takes the task from now on sees the mark
	// before it starts, and one that has it already checks the mark when
	// its context is canceled below.
	if err := (outcome.Cancels{RDB: c.rdb}).Mark(ctx, taskID, cancelMarkerTTL); err != nil {
		return Status{}, fmt.Errorf("%w: marking %s canceled: %w", ErrUnavailable, taskID, err)
	}
	if info.State != asynq.TaskStateActive {
		err := c.inspector.ArchiveTask(info.Queue, taskID)
		if err == nil {
			return c.finishCanceled(ctx, info)
		}
		// It became active (or final) meanwhile: stop it like a running one.
	}
	if err := c.inspector.CancelProcessing(taskID); err != nil {
		return Status{}, fmt.Errorf("%w: asking the worker to stop %s: %w", ErrUnavailable, taskID, err)
	}
	return c.awaitStop(ctx, taskID)
}

// awaitStop follows a running export told to stop. Its worker finishes it
// (canceled, or completed if it got there first); asynq then moves a task
// whose context was canceled to retry whatever its handler returned, or
// archives it on its last attempt. Once it leaves active it is archived here
// and finished, which does nothing when its worker finished it already; if
// this gives up first, the task's next attempt finds it final and ends.
func (c *Client) awaitStop(ctx context.Context, taskID string) (Status, error) {
	deadline := time.Now().Add(stopWait)
	for {
		info, err := c.taskInfo(ctx, taskID)
		if err != nil {
			return Status{}, err
		}
		switch info.State {
		case asynq.TaskStateCompleted:
			return c.Status(ctx, taskID)
		case asynq.TaskStateArchived:
			return c.finishCanceled(ctx, info)
		case asynq.TaskStateActive:
		default:
			if err := c.inspector.ArchiveTask(info.Queue, taskID); err == nil {
				return c.finishCanceled(ctx, info)
			}
		}
		if time.Now().After(deadline) {
			return c.statusOf(ctx, info) // still stopping: the caller sees it active
		}
		select {
		case <-ctx.Done():
			return Status{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// finishCanceled finishes an export this client archived (no worker will
// run it again) as canceled, and returns its status: canceled, or what its
// worker recorded first.
func (c *Client) finishCanceled(ctx context.Context, info *asynq.TaskInfo) (Status, error) {
	var env *spec.Envelope
	if e, err := spec.DecodeEnvelope(info.Payload); err == nil {
		env = &e // a payload no worker could read has nothing beside it and no callback
	}
	f := spec.Final{TaskID: info.ID, State: spec.StateCanceled, Error: canceledMessage, Retried: info.Retried}
	if env != nil {
		f.ManualID, f.Version, f.RequestID = env.ManualID, env.Version, env.RequestID
	}
	done, err := c.finisher.Finish(ctx, info.Queue, env, f)
	s := Status{TaskID: info.ID, Queue: info.Queue, Retried: info.Retried, MaxRetry: info.MaxRetry}.with(done.Final)
	if err != nil {
		return s, fmt.Errorf("%w: %s is archived, but finishing it failed: %w", ErrUnavailable, info.ID, err)
	}
	return s, nil
}
