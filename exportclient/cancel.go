package exportclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/htmlstore"
	"github.com/pdfexport/pdfexport/internal/outcome"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// ErrFinal: the export is final already (completed, failed, canceled), so
// there is nothing to cancel. Cancel returns it with the export's Status.
var ErrFinal = errors.New("exportclient: export is final already")

// canceledMessage is the error of a canceled export.
const canceledMessage = "export canceled by request"

// cancelMarkerTTL keeps the mark as long as asynq keeps archived tasks
// (90 days), so status never turns a canceled export into a failed one.
const cancelMarkerTTL = 90 * 24 * time.Hour

// stopWait bounds how long Cancel waits for a running export to stop.
const stopWait = 10 * time.Second

// Cancel cancels an export. One that no worker has taken (pending,
// scheduled, waiting for a retry) is archived at once and is canceled when
// Cancel returns; its callback, if any, is enqueued and waiters wake. One
// that is running is told to stop: its render stops, its render lock is
// released as failed (a duplicate waiting for it takes over), nothing is
// stored, and its worker reports it canceled; Cancel waits up to 10 s (or
// ctx) for that and returns the state it saw, which may still be active, or
// completed if it finished first. A final export gives ErrFinal.
func (c *Client) Cancel(ctx context.Context, taskID string) (Status, error) {
	info, err := c.taskInfo(ctx, taskID)
	if err != nil {
		return Status{}, err
	}
	if s, err := statusOf(info); err != nil || s.Final() {
		s, serr := c.Status(ctx, taskID) // tells canceled from failed
		return s, errors.Join(serr, fmt.Errorf("%w: %s is %s", ErrFinal, taskID, s.State))
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
			return c.archivedByCancel(ctx, info)
		}
		// It became active (or final) meanwhile: stop it like a running one.
	}
	if err := c.inspector.CancelProcessing(taskID); err != nil {
		return Status{}, fmt.Errorf("%w: asking the worker to stop %s: %w", ErrUnavailable, taskID, err)
	}
	return c.awaitStop(ctx, taskID)
}

// awaitStop follows a running export told to stop. asynq moves a task whose
// context was canceled to retry, whatever its handler returned, so once it
// leaves active it is archived here (its worker reported it canceled
// already); if this gives up first, the task's next attempt finds the
// cancel mark and archives itself.
func (c *Client) awaitStop(ctx context.Context, taskID string) (Status, error) {
	deadline := time.Now().Add(stopWait)
	for {
		info, err := c.taskInfo(ctx, taskID)
		if err != nil {
			return Status{}, err
		}
		switch info.State {
		case asynq.TaskStateCompleted, asynq.TaskStateArchived:
			return c.Status(ctx, taskID)
		case asynq.TaskStateActive:
		default:
			if err := c.inspector.ArchiveTask(info.Queue, taskID); err == nil {
				return c.archivedByCancel(ctx, info)
			}
		}
		if time.Now().After(deadline) {
			return statusOf(info) // still stopping: the caller sees it active
		}
		select {
		case <-ctx.Done():
			return Status{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// archivedByCancel reports an export this client archived: no worker will
// run it again, so the canceller reports it (a worker that stopped it may
// have too: a callback is enqueued once per export, a second announcement
// is harmless) and gives back the reference to a source document stored
// beside it and its credentials, which a worker never does for a task it
// stopped.
func (c *Client) archivedByCancel(ctx context.Context, info *asynq.TaskInfo) (Status, error) {
	s := Status{TaskID: info.ID, Queue: info.Queue, State: StateCanceled, Error: canceledMessage, Retried: info.Retried, MaxRetry: info.MaxRetry}
	p, err := spec.Decode(info.Payload)
	if err != nil {
		return s, nil // a payload no worker could read has no callback either
	}
	var errs []error
	if ref := p.Source.HTMLRef; ref != nil {
		errs = append(errs, htmlstore.Release(ctx, c.rdb, *ref))
	}
	if ref := p.Source.Credentials; ref != nil {
		errs = append(errs, c.creds.Release(ctx, *ref))
	}
	f := spec.Final{TaskID: info.ID, State: spec.StateCanceled, ManualID: p.ManualID, Version: p.Version, RequestID: p.RequestID,
		Error: canceledMessage, Retried: info.Retried}
	errs = append(errs, c.reporter.Final(ctx, info.Queue, f, p.Callback))
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("%w: %s is canceled, but reporting it failed: %w", ErrUnavailable, info.ID, err)
	}
	return s, nil
}
