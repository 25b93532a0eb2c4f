package exportclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
)

// State of an export.
type State string

// States. Pending, Scheduled, Active and Retry are on their way; Completed,
// Failed and Canceled are final.
const (
	StatePending   State = "pending"
	StateActive    State = "active"
	StateRetry     State = "retry"
	StateScheduled State = "scheduled"
	StateCompleted State = spec.StateCompleted
	StateFailed    State = spec.StateFailed   // archived by asynq after its last retry or on bad input
	StateCanceled  State = spec.StateCanceled // canceled by request (Cancel, DELETE /v1/exports/{id})
)

// Status is what is known about an export.
type Status struct {
	TaskID string  `json:"task_id"`
	Queue  string  `json:"queue"`
	State  State   `json:"state"`
	Result *Result `json:"result,omitempty"`
	Error  string  `json:"error,omitempty"`
	// Kind is a failed export's kind (Final.Kind), when its final state
	// was recorded with one.
	Kind string `json:"kind,omitempty"`
	// Detail is what the failure of its kind names (Final.Detail).
	Detail   *FailureDetail `json:"detail,omitempty"`
	Retried  int            `json:"retried"`
	MaxRetry int            `json:"max_retry"`
	// Client is the HTTP API client the export belongs to (ForClient);
	// empty for one enqueued without it.
	Client string `json:"client,omitempty"`
	// Progress is a manual's (source.chapters) while it is not final.
	Progress *Progress `json:"progress,omitempty"`
}

// Progress counts the chapters of a manual that are stored, by whichever
// worker stored them, out of its distinct chapters.
type Progress struct {
	ChaptersDone  int `json:"chapters_done"`
	ChaptersTotal int `json:"chapters_total"`
}

// Final reports whether the export will not change state any more.
func (s Status) Final() bool {
	return s.State == StateCompleted || s.State == StateFailed || s.State == StateCanceled
}

// Status returns the state of a task, searching every queue.
func (c *Client) Status(ctx context.Context, taskID string) (Status, error) {
	if isStored(taskID) {
		s, _, err := c.storedStatus(ctx, taskID)
		return s, err
	}
	info, err := c.taskInfo(ctx, taskID)
	if err != nil {
		return Status{}, err
	}
	return c.statusOf(ctx, info)
}

// statusOf is the status of a task asynq describes as info. The final state
// recorded when the export was finished wins over asynq's: a task canceled
// while it completed is completed, one stopped by a cancel is canceled
// although asynq may still show it in retry until the canceller archives it.
func (c *Client) statusOf(ctx context.Context, info *asynq.TaskInfo) (Status, error) {
	s, err := statusOf(info)
	if err != nil {
		return s, err
	}
	if s.State == StateCompleted && s.Result != nil {
		return s, nil
	}
	f, ok, err := outcome.Recorded(ctx, c.rdb, info.ID)
	if err != nil {
		return s, fmt.Errorf("%w: reading the final state of %s: %w", ErrUnavailable, info.ID, err)
	}
	if ok {
		return s.with(f), nil
	}
	if n, manual := chaptersOf(info.Payload); manual && !s.Final() {
		done, total, started, err := outcome.ChaptersDone(ctx, c.rdb, info.ID)
		if err != nil {
			return s, fmt.Errorf("%w: reading the progress of %s: %w", ErrUnavailable, info.ID, err)
		}
		if !started {
			total = n // 0 for a site before its chapters are discovered
		}
		s.Progress = &Progress{ChaptersDone: done, ChaptersTotal: total}
	}
	if s.State == StateFailed {
		// Archived without a record: by the previous release's canceller,
		// or a moment before the worker's sweep finishes it.
		canceled, err := outcome.Cancels{RDB: c.rdb}.Canceled(ctx, info.ID)
		if err != nil {
			return s, fmt.Errorf("%w: reading the cancel marker of %s: %w", ErrUnavailable, info.ID, err)
		}
		if canceled {
			s.State = StateCanceled
			if s.Error == "" {
				s.Error = canceledMessage
			}
		}
	}
	return s, nil
}

// taskInfo finds a task in any queue.
func (c *Client) taskInfo(ctx context.Context, taskID string) (*asynq.TaskInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Most tasks are on this client's queue: one read, no queue listing.
	if info, err := c.inspector.GetTaskInfo(c.cfg.Queue, taskID); err == nil && info.Type == tasks.TypeExport {
		return info, nil
	}
	queues, err := c.inspector.Queues()
	if err != nil {
		return nil, fmt.Errorf("%w: listing queues: %w", ErrUnavailable, err)
	}
	for _, q := range queues {
		info, err := c.inspector.GetTaskInfo(q, taskID)
		if errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: reading task %s: %w", ErrUnavailable, taskID, err)
		}
		if info.Type != tasks.TypeExport {
			break // a callback or other task: not an export
		}
		return info, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, taskID)
}

func statusOf(info *asynq.TaskInfo) (Status, error) {
	s := Status{TaskID: info.ID, Queue: info.Queue, Error: info.LastErr, Retried: info.Retried, MaxRetry: info.MaxRetry,
		Client: clientOf(info.Payload)}
	switch info.State {
	case asynq.TaskStateCompleted:
		s.State, s.Error = StateCompleted, ""
		if len(info.Result) > 0 {
			var res spec.Result
			if err := spec.DecodeResult(info.Result, &res); err != nil {
				return s, fmt.Errorf("exportclient: task %s has a malformed result: %w", info.ID, err)
			}
			s.Result = publicResultPtr(&res)
		}
	case asynq.TaskStateArchived:
		s.State = StateFailed
	case asynq.TaskStateActive:
		s.State = StateActive
	case asynq.TaskStateRetry:
		s.State = StateRetry
	case asynq.TaskStateScheduled:
		s.State = StateScheduled
	default:
		s.State = StatePending
	}
	return s, nil
}

// clientOf reads the envelope's client, leniently: an envelope no worker
// can read (it fails for good) still belongs to whoever enqueued it.
// chaptersOf counts the chapters of a manual's envelope (0 for a site,
// whose chapters the worker discovers) and says whether it is a manual.
func chaptersOf(payload []byte) (int, bool) {
	var e struct {
		Source struct {
			Chapters []json.RawMessage `json:"chapters"`
			Site     json.RawMessage   `json:"site"`
		} `json:"source"`
	}
	_ = json.Unmarshal(payload, &e)
	return len(e.Source.Chapters), len(e.Source.Chapters) > 0 || len(e.Source.Site) > 0
}

func clientOf(payload []byte) string {
	var e struct {
		Client string `json:"client"`
	}
	_ = json.Unmarshal(payload, &e)
	return e.Client
}

// Wait returns once the export is final or ctx ends. It wakes on the
// outcome the worker announces (one shared subscription per Client), so a
// final export is seen within about a millisecond; every interval (default
// 1s) it also reads the task's state, which covers an announcement missed
// while Redis was unreachable. Until the subscription is up (being set up,
// or failing) it polls every interval, at most 100ms, and never waits for
// the subscription itself: it answers by ctx whatever the other waiters do.
// A task in retry keeps being waited for. Polls read only the task's state
// (one HGET of a few bytes), not its payload.
func (c *Client) Wait(ctx context.Context, taskID string, interval time.Duration) (Status, error) {
	if interval <= 0 {
		interval = time.Second
	}
	var announced <-chan spec.Final
	var ready <-chan struct{} // closed once announcements arrive; nil: never, or they do already
	if w, err := c.finals.Watch(taskID); err == nil {
		defer w.Stop()
		announced, ready = w.C(), w.Ready()
	}
	every := interval
	select {
	case <-ready:
		ready = nil
	default:
		every = min(interval, 100*time.Millisecond)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var s Status
	var err error
	full := true // read the whole task: first poll, unknown queue, or a final state
	for {
		if full {
			st, serr := c.Status(ctx, taskID)
			if serr != nil && ctx.Err() != nil && s.TaskID != "" {
				// The wait ended during the read: answer with the state known.
				return s, fmt.Errorf("waiting for %s (state %s): %w", taskID, s.State, ctx.Err())
			}
			s, err = st, serr
			if err != nil && !errors.Is(err, ErrUnavailable) {
				return s, err
			}
			if err == nil && s.Final() {
				return s, nil
			}

		}
		select {
		case <-ctx.Done():
			if err != nil {
				return s, err
			}
			return s, fmt.Errorf("waiting for %s (state %s): %w", taskID, s.State, ctx.Err())
		case f := <-announced:
			return s.with(f), nil
		case <-ready:
			// Subscribed now: read the task once more (an outcome announced
			// before is in its state or recorded), then poll at the interval.
			ready, full = nil, true
			t.Reset(interval)
			continue
		case <-t.C:
		}
		full = s.Queue == "" || c.finalOrGone(ctx, s.Queue, taskID)
	}
}

// with is s updated by a recorded or announced final state.
func (s Status) with(f spec.Final) Status {
	s.TaskID, s.State, s.Result, s.Error, s.Kind, s.Retried = f.TaskID, State(f.State), publicResultPtr(f.Result), f.Error, f.Kind, f.Retried
	s.Detail = (*FailureDetail)(f.Detail)
	return s
}

// finalOrGone reads only the state field of asynq's task hash. It answers
// true when the state is final (completed, archived), when the task is gone
// (retention ended, deleted) and when the read fails, so that the caller
// reads the whole task and reports exactly what happened.
func (c *Client) finalOrGone(ctx context.Context, queue, taskID string) bool {
	state, err := c.rdb.HGet(ctx, keyspace.AsynqTask(queue, taskID), keyspace.AsynqTaskState).Result()
	return err != nil || state == "completed" || state == "archived"
}

// Artifact returns an export's status and the key of its artifact relative
// to the storage location (STORAGE_URL), as the payload determines it.
func (c *Client) Artifact(ctx context.Context, taskID string) (Status, string, error) {
	if isStored(taskID) {
		s, rec, err := c.storedStatus(ctx, taskID)
		return s, rec.Key, err
	}
	info, err := c.taskInfo(ctx, taskID)
	if err != nil {
		return Status{}, "", err
	}
	p, err := spec.DecodeEnvelope(info.Payload)
	if err != nil {
		return Status{}, "", fmt.Errorf("exportclient: task %s has a malformed payload: %w", taskID, err)
	}
	s, err := c.Status(ctx, taskID)
	if p.Source.Site != nil {
		// Its key is its discovered chapters', which only the result
		// knows: the last three segments of the full key,
		// "{manual_id}/{version}/{hash}.pdf".
		key := ""
		if s.Result != nil {
			if parts := strings.Split(s.Result.ArtifactKey, "/"); len(parts) >= 3 {
				key = strings.Join(parts[len(parts)-3:], "/")
			}
		}
		return s, key, err
	}
	return s, p.ArtifactKey(), err
}
