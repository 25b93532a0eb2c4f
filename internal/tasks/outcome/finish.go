package outcome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
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
	// before it releases and announces; an error it returns ends Finish
	// there, as if the process had died.
	afterRecord func(taskID string) error
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

// keyspace.FinishingIndex is the index of exports whose final steps may not
// all have run: a sorted set of task ids scored by when their Finish began
// (unix ms). Finish adds the task before it records, and removes it once
// every step after the record succeeded; the sweep re-drives entries older
// than RedriveAfter (Sweeper). An entry is only a hint: what says the steps
// are still owed is the task's finishing marker (keyspace.Finishing: a hash
// of queue, envelope, and announced once the announcement went out, on the
// record's Cluster slot), written in one script with the record.

// RedriveAfter is how old an entry of keyspace.FinishingIndex must be before a sweep
// re-drives it: longer than any Finish in flight takes (its callers give it
// at most a few seconds), so a sweep never races a Finish that is still
// working.
const RedriveAfter = 30 * time.Second

// recordScript records a final state once and, in the same step, the
// finishing marker of the steps that follow; a call that finds the state
// recorded already and ends an archived task (ARGV[5]) keeps the record as
// long as asynq keeps the archived task.
//
//	KEYS[1] the record   KEYS[2] the finishing marker
//	ARGV[1] the record's body   ARGV[2] its ttl (ms)   ARGV[3] queue
//	ARGV[4] the envelope (JSON, "" for none)   ARGV[5] archived ttl (ms), 0: none
//
// Returns 1 when this call recorded, 0 otherwise.
var recordScript = redis.NewScript(recordBody)

const recordBody = `
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  redis.call("HSET", KEYS[2], "queue", ARGV[3], "envelope", ARGV[4])
  redis.call("PEXPIRE", KEYS[2], ARGV[2])
  return 1
end
local keep = tonumber(ARGV[5])
if keep > 0 and redis.call("PTTL", KEYS[1]) < keep then
  redis.call("PEXPIRE", KEYS[1], keep)
end
return 0
`

// indexAndRecordScript is recordScript with the index entry added first,
// in the same step: where every key lives on one server (no Cluster), a
// Finish indexes and records in one round trip, and a process dying
// between the two cannot happen.
//
//	KEYS[3] keyspace.FinishingIndex   ARGV[6] the entry's score (unix ms)   ARGV[7] the task id
var indexAndRecordScript = redis.NewScript(`redis.call("ZADD", KEYS[3], ARGV[6], ARGV[7])` + recordBody)

// announceAndClearScript announces a final state and clears the finishing
// marker and the index entry, in that order and in one step: the last
// steps of a Finish on one server with nothing else owed.
//
//	KEYS[1] the finishing marker   KEYS[2] keyspace.FinishingIndex
//	ARGV[1] the channel   ARGV[2] the announcement   ARGV[3] the task id
var announceAndClearScript = redis.NewScript(`
redis.call("SPUBLISH", ARGV[1], ARGV[2])
redis.call("DEL", KEYS[1])
redis.call("ZREM", KEYS[2], ARGV[3])
return 1
`)

// oneServer reports whether every key a Finish touches lives on one Redis
// server, so that one script may name keys of different Cluster slots (the
// index and the task's keys). On a Cluster the steps stay apart, in their
// crash-safe order.
func (r *Finisher) oneServer() bool {
	_, cluster := r.RDB.(*redis.ClusterClient)
	return !cluster
}

// Finish makes an export final with f (f.TaskID and f.State required). The
// first call for a task records f and then, for that task: releases what it
// stored beside itself (env names it: the task's own credentials and
// encryption passwords and its ownership of a source document; Redis, not env, says what the task owns,
// so a forged reference releases nothing), announces f and, when env asks
// for a callback, enqueues its delivery on queue. Every later call, however
// it races with the first, changes nothing and reports the recorded state,
// except that a later call ending the task as failed or canceled (the task
// is archived, or about to be) keeps the record for ArchivedFinalTTL: a
// completion racing a cancel leaves an archived task with a completed
// record, and the record must outlive it. env may be nil (a payload no
// worker could read has nothing to release and no callback).
//
// The record and a finishing marker are written in one step, and the steps
// after the record are re-drivable: if the process dies after the record, or
// a step fails on a Redis error, the sweep (Sweeper) runs them again after
// RedriveAfter, from the marker, until they all succeed. Each step is
// idempotent: a release is at most once per task, the callback task's id is
// fixed, and a re-drive announces only if the announcement did not go out.
// An error from a later step is returned with Recorded true: the export is
// final; the caller logs it.
func (r *Finisher) Finish(ctx context.Context, queue string, env *spec.Envelope, f spec.Final) (Finished, error) {
	if f.TaskID == "" || (f.State != spec.StateCompleted && f.State != spec.StateFailed && f.State != spec.StateCanceled) {
		return Finished{}, fmt.Errorf("outcome: Finish needs a task id and a final state, got %q %q", f.TaskID, f.State)
	}
	body, err := json.Marshal(f)
	if err != nil {
		return Finished{}, fmt.Errorf("outcome: encoding: %w", err)
	}
	var envJSON []byte
	if env != nil {
		if envJSON, err = json.Marshal(env); err != nil {
			return Finished{}, fmt.Errorf("outcome: encoding the envelope of %s: %w", f.TaskID, err)
		}
	}
	ttl := ArchivedFinalTTL
	if f.State == spec.StateCompleted && r.Retention > 0 {
		ttl = r.Retention
	}
	var keep time.Duration
	if f.State != spec.StateCompleted {
		keep = ArchivedFinalTTL
	}
	// Indexed before the record, so that a process dying right after the
	// record leaves an entry the sweep finds; a call that does not record
	// leaves one the sweep drops (no marker).
	now := time.Now().UnixMilli()
	var won int
	if r.oneServer() {
		won, err = indexAndRecordScript.Run(ctx, r.RDB, []string{keyspace.Final(f.TaskID), keyspace.Finishing(f.TaskID), keyspace.FinishingIndex},
			body, ttl.Milliseconds(), queue, envJSON, keep.Milliseconds(), now, f.TaskID).Int()
	} else {
		if err := r.RDB.ZAdd(ctx, keyspace.FinishingIndex, redis.Z{Score: float64(now), Member: f.TaskID}).Err(); err != nil {
			return Finished{}, fmt.Errorf("outcome: indexing the finish of %s: %w", f.TaskID, err)
		}
		won, err = recordScript.Run(ctx, r.RDB, []string{keyspace.Final(f.TaskID), keyspace.Finishing(f.TaskID)},
			body, ttl.Milliseconds(), queue, envJSON, keep.Milliseconds()).Int()
	}
	if err != nil {
		return Finished{}, fmt.Errorf("outcome: recording %s as %s: %w", f.TaskID, f.State, err)
	}
	if won == 0 {
		rec, ok, err := Recorded(ctx, r.RDB, f.TaskID)
		if err != nil || !ok {
			return Finished{Final: f}, errors.Join(err, fmt.Errorf("outcome: %s is final already, but its record could not be read", f.TaskID))
		}
		return Finished{Final: rec}, nil
	}
	if r.afterRecord != nil {
		if err := r.afterRecord(f.TaskID); err != nil {
			return Finished{Final: f, Recorded: true}, err
		}
	}
	n, err := r.complete(ctx, f.TaskID, queue, env, body, false)
	return Finished{Final: f, Recorded: true, Released: n}, err
}

// complete runs the steps after the record — release, announcement,
// callback — and, once all succeeded, clears the finishing marker and the
// index entry. announced skips the announcement (a re-drive of a Finish
// whose announcement went out). It returns how many items it released.
func (r *Finisher) complete(ctx context.Context, taskID, queue string, env *spec.Envelope, body []byte, announced bool) (int, error) {
	var errs []error
	n := 0
	if env != nil {
		var err error
		n, err = r.release(ctx, taskID, env)
		errs = append(errs, err)
	}
	callback := env != nil && env.Callback != nil && env.Callback.URL != ""
	if !announced && !callback && errors.Join(errs...) == nil && r.oneServer() {
		// A reply lost after the script ran leaves nothing owed; a script
		// that did not run leaves the marker for a re-drive.
		if err := announceAndClearScript.Run(ctx, r.RDB, []string{keyspace.Finishing(taskID), keyspace.FinishingIndex},
			keyspace.FinalChannel, body, taskID).Err(); err != nil {
			return n, fmt.Errorf("outcome: announcing %s: %w", taskID, err)
		}
		return n, nil
	}
	if !announced {
		if err := r.RDB.SPublish(ctx, keyspace.FinalChannel, body).Err(); err != nil {
			errs = append(errs, fmt.Errorf("announcing %s: %w", taskID, err))
		} else {
			announced = true
		}
	}
	if env != nil && env.Callback != nil && env.Callback.URL != "" {
		errs = append(errs, r.enqueueCallback(ctx, queue, taskID, env.Callback.URL, body))
	}
	if err := errors.Join(errs...); err != nil {
		if announced {
			// Best-effort: without it a re-drive announces once more,
			// which waiters read as the same outcome.
			_ = r.RDB.HSet(ctx, keyspace.Finishing(taskID), "announced", "1").Err()
		}
		return n, err
	}
	// The marker first: an index entry without one is dropped by the sweep.
	if err := r.RDB.Del(ctx, keyspace.Finishing(taskID)).Err(); err != nil {
		return n, fmt.Errorf("outcome: clearing the finishing marker of %s: %w", taskID, err)
	}
	if err := r.RDB.ZRem(ctx, keyspace.FinishingIndex, taskID).Err(); err != nil {
		return n, fmt.Errorf("outcome: clearing the finishing entry of %s: %w", taskID, err)
	}
	return n, nil
}

// redrive runs the final steps of taskID again if its finishing marker says
// they are owed, and drops its index entry otherwise. It reports whether it
// ran them.
func (r *Finisher) redrive(ctx context.Context, taskID string) (bool, error) {
	var marker *redis.MapStringStringCmd
	var rec *redis.StringCmd
	// One slot: the marker and the record go to one node in one round trip.
	_, err := r.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		marker = p.HGetAll(ctx, keyspace.Finishing(taskID))
		rec = p.Get(ctx, keyspace.Final(taskID))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("outcome: reading the finishing marker of %s: %w", taskID, err)
	}
	m := marker.Val()
	body, recErr := rec.Bytes()
	if len(m) == 0 || recErr != nil {
		// Nothing owed: every step succeeded, or the call that indexed
		// it did not record (it lost the race, or died before).
		if len(m) != 0 {
			_ = r.RDB.Del(ctx, keyspace.Finishing(taskID)).Err()
		}
		return false, r.RDB.ZRem(ctx, keyspace.FinishingIndex, taskID).Err()
	}
	var env *spec.Envelope
	if s := m["envelope"]; s != "" {
		var e spec.Envelope
		if err := json.Unmarshal([]byte(s), &e); err != nil {
			return false, fmt.Errorf("outcome: the finishing marker of %s: envelope: %w", taskID, err)
		}
		env = &e
	}
	_, err = r.complete(ctx, taskID, m["queue"], env, body, m["announced"] == "1")
	return true, err
}

// release gives up what the task stored beside itself.
func (r *Finisher) release(ctx context.Context, taskID string, env *spec.Envelope) (int, error) {
	return (&sidestore.Store{RDB: r.RDB}).Release(ctx, taskID, sidestore.Refs(env)...)
}

// IsFinal reports whether taskID has a recorded final state.
func IsFinal(ctx context.Context, rdb redis.UniversalClient, taskID string) (bool, error) {
	n, err := rdb.Exists(ctx, keyspace.Final(taskID)).Result()
	return n > 0, err
}

// Recorded returns the final state recorded for taskID, if any.
func (r *Finisher) Recorded(ctx context.Context, taskID string) (spec.Final, bool, error) {
	return Recorded(ctx, r.RDB, taskID)
}
