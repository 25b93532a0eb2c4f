package outcome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/credstore"
	"github.com/pdfexport/pdfexport/internal/htmlstore"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Finisher ends exports. Safe for concurrent use; the zero value is not
// usable: RDB and Client are required.
type Finisher struct {
	RDB    redis.UniversalClient // the queue Redis: records, announcements, data beside tasks
	Client *asynq.Client         // enqueues pdf:callback tasks on the same Redis
	// CallbackMaxRetry is the callback task's retries (CALLBACK_MAX_RETRY).
	CallbackMaxRetry int
	// Retention keeps a completed export's record and its delivered callback
	// task (and so its id) readable: RESULT_RETENTION.
	Retention time.Duration

	// afterRecord, when set (tests), runs after Finish recorded a state and
	// before it releases and announces.
	afterRecord func(taskID string)
}

// Finished is what Finish did.
type Finished struct {
	// Final is the task's recorded final state: f when this call recorded
	// it, or what an earlier Finish recorded.
	Final spec.Final
	// Recorded is true for the one call that recorded the state (and so
	// released, announced and enqueued the callback).
	Recorded bool
	// Released counts the items beside the task this call released.
	Released int
}

// Finish makes an export final with f (f.TaskID and f.State required). The
// first call for a task records f and then, for that task: releases what it
// stored beside itself (env names it: the task's own credentials and
// encryption passwords and its ownership of a source document; Redis, not env, says what the task owns,
// so a forged reference releases nothing), announces f and, when env asks
// for a callback, enqueues its delivery on queue. Every later call, however
// it races with the first, changes nothing and reports the recorded state.
// env may be nil (a payload no worker could read has nothing to release and
// no callback).
//
// The record is written first, so a crash after it leaves the rest to the
// TTLs of what the task stored (SOURCE_TTL), and never runs it twice. An
// error from a later step is returned with Recorded true: the export is
// final; the caller logs it.
func (r *Finisher) Finish(ctx context.Context, queue string, env *spec.Envelope, f spec.Final) (Finished, error) {
	if f.TaskID == "" || (f.State != spec.StateCompleted && f.State != spec.StateFailed && f.State != spec.StateCanceled) {
		return Finished{}, fmt.Errorf("outcome: Finish needs a task id and a final state, got %q %q", f.TaskID, f.State)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return Finished{}, fmt.Errorf("outcome: encoding: %w", err)
	}
	ttl := ArchivedFinalTTL
	if f.State == spec.StateCompleted && r.Retention > 0 {
		ttl = r.Retention
	}
	won, err := r.RDB.SetNX(ctx, FinalKey(f.TaskID), body, ttl).Result()
	if err != nil {
		return Finished{}, fmt.Errorf("outcome: recording %s as %s: %w", f.TaskID, f.State, err)
	}
	if !won {
		rec, ok, err := Recorded(ctx, r.RDB, f.TaskID)
		if err != nil || !ok {
			return Finished{Final: f}, errors.Join(err, fmt.Errorf("outcome: %s is final already, but its record could not be read", f.TaskID))
		}
		return Finished{Final: rec}, nil
	}
	if r.afterRecord != nil {
		r.afterRecord(f.TaskID)
	}
	done := Finished{Final: f, Recorded: true}
	var errs []error
	if env != nil {
		n, err := r.release(ctx, f.TaskID, env)
		done.Released = n
		errs = append(errs, err)
	}
	if err := r.RDB.SPublish(ctx, Channel, body).Err(); err != nil {
		// Best-effort: waiters also poll, and read the record.
		errs = append(errs, fmt.Errorf("announcing %s: %w", f.TaskID, err))
	}
	if env != nil && env.Callback != nil && env.Callback.URL != "" {
		errs = append(errs, r.enqueueCallback(ctx, queue, f.TaskID, env.Callback.URL, body))
	}
	return done, errors.Join(errs...)
}

// release gives up what the task stored beside itself.
func (r *Finisher) release(ctx context.Context, taskID string, env *spec.Envelope) (int, error) {
	n := 0
	var errs []error
	src := env.Source
	if ref := env.EncryptionRef; ref != nil {
		ok, err := (&credstore.Store{RDB: r.RDB}).ReleasePasswords(ctx, taskID, *ref)
		if ok {
			n++
		}
		errs = append(errs, err)
	}
	if ref := src.Credentials; ref != nil {
		ok, err := (&credstore.Store{RDB: r.RDB}).Release(ctx, taskID, *ref)
		if ok {
			n++
		}
		errs = append(errs, err)
	}
	if ref := src.HTMLRef; ref != nil {
		ok, err := htmlstore.Release(ctx, r.RDB, taskID, *ref)
		if ok {
			n++
		}
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// IsFinal reports whether taskID has a recorded final state.
func IsFinal(ctx context.Context, rdb redis.UniversalClient, taskID string) (bool, error) {
	n, err := rdb.Exists(ctx, FinalKey(taskID)).Result()
	return n > 0, err
}

// Recorded returns the final state recorded for taskID, if any.
func (r *Finisher) Recorded(ctx context.Context, taskID string) (spec.Final, bool, error) {
	return Recorded(ctx, r.RDB, taskID)
}
