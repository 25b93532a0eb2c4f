package exportclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
)

// An export whose artifact is stored already need not be queued: a worker
// would only read storage and answer with what is there. A caller that
// reads storage itself (bin/api does) finds the artifact under the
// request's key (Payload.ArtifactKey, the worker's own derivation)
// and records the export as completed with CompleteStored: one Redis
// command, instead of the queued task's enqueue, pick-up, gate, result
// and final record (BENCHMARKS.md has the figures). The export has a task id
// like any other (StoredPrefix + a UUID), so Status, Wait, Artifact,
// Cancel (ErrFinal), the API's GET /v1/exports/{id}, its download and
// `enqueue status` answer for it during Retention.

// StoredPrefix starts the task id of an export completed by CompleteStored.
// asynq's task ids of this client are UUIDs, so no queued task has it.
const StoredPrefix = "stored-"

// ErrNotReusable matches CompleteStored's error for a request whose stored
// artifact a worker would not simply reuse: force, per-export credentials
// or passwords (their keyed identity is the enqueuer's to compute), or a
// callback (its delivery is a worker's job). Enqueue such a request.
var ErrNotReusable = errors.New("exportclient: request is not answered from storage")

// Reusable reports whether a stored artifact under p's key answers p as a
// worker would (see ErrNotReusable); p's key is then p.ArtifactKey().
func Reusable(p Payload) bool {
	// A site's key is known only after a worker read its navigation.
	return !p.Force && p.Source.Site == nil && p.spec().Source.Credentials.Empty() && p.Options.Encryption == nil && p.Callback == nil
}

// storedRecord is what CompleteStored keeps under keyspace.Stored.
type storedRecord struct {
	Queue     string  `json:"queue"`
	Client    string  `json:"client,omitempty"`
	Key       string  `json:"key"` // relative to the storage prefix
	ManualID  string  `json:"manual_id"`
	Version   string  `json:"version"`
	RequestID string  `json:"request_id,omitempty"`
	Result    *Result `json:"result"`
}

// CompleteStored records p as an export completed with r, the result of
// the artifact stored under p.ArtifactKey(), without queuing a task: one
// SET with the client's Retention. p is validated as Enqueue would (errors
// match ErrInvalid), must be Reusable (else ErrNotReusable), and r must
// describe p's artifact. The Queue and ForClient options apply as to
// Enqueue: the export belongs to that client and reports that queue;
// TaskID, with an id of NewStoredID, sets its id.
func (c *Client) CompleteStored(ctx context.Context, p Payload, r Result, opts ...EnqueueOption) (Enqueued, error) {
	if err := c.Validate(p); err != nil {
		return Enqueued{}, err
	}
	if !Reusable(p) {
		return Enqueued{}, ErrNotReusable
	}
	s, err := c.settings(opts)
	if err != nil {
		return Enqueued{}, err
	}
	key := p.ArtifactKey()
	if r.ArtifactKey != key && !strings.HasSuffix(r.ArtifactKey, "/"+key) {
		return Enqueued{}, fmt.Errorf("exportclient: result of artifact %s given for key %s", r.ArtifactKey, key)
	}
	taskID := s.taskID
	if taskID == "" {
		taskID = NewStoredID()
	} else if !isStored(taskID) {
		return Enqueued{}, &FieldError{Field: "task_id", Rule: "an export completed from storage has an id starting with " + StoredPrefix + " (NewStoredID)"}
	}
	b, err := json.Marshal(storedRecord{Queue: s.queue, Client: s.client, Key: key, ManualID: p.ManualID, Version: p.Version, RequestID: p.RequestID, Result: &r})
	if err != nil {
		return Enqueued{}, fmt.Errorf("exportclient: encoding the stored export: %w", err)
	}
	if err := c.rdb.Set(ctx, keyspace.Stored(taskID), b, c.cfg.Retention).Err(); err != nil {
		return Enqueued{}, fmt.Errorf("%w: recording a stored export: %w", ErrUnavailable, err)
	}
	return Enqueued{TaskID: taskID, Queue: s.queue, ArtifactKey: key}, nil
}

// NewStoredID is a fresh task id for CompleteStored's TaskID option, for a
// caller that puts the id in the result first (its download_url).
func NewStoredID() string { return StoredPrefix + uuid.NewString() }

// storedStatus reads an export CompleteStored recorded: one GET.
func (c *Client) storedStatus(ctx context.Context, taskID string) (Status, storedRecord, error) {
	b, err := c.rdb.Get(ctx, keyspace.Stored(taskID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Status{}, storedRecord{}, fmt.Errorf("%w: %s", ErrNotFound, taskID)
	}
	if err != nil {
		return Status{}, storedRecord{}, fmt.Errorf("%w: reading %s: %w", ErrUnavailable, taskID, err)
	}
	var rec storedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return Status{}, storedRecord{}, fmt.Errorf("exportclient: %s: %w", keyspace.Stored(taskID), err)
	}
	return Status{TaskID: taskID, Queue: rec.Queue, State: StateCompleted, Result: rec.Result, Client: rec.Client}, rec, nil
}

func isStored(taskID string) bool { return strings.HasPrefix(taskID, StoredPrefix) }
