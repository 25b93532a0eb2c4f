package outcome

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// Sweeper finishes the exports asynq archived without a Finish: a worker
// lost on the last attempt (asynq's recoverer archives the task when its
// lease expires), an "Archive" from the dashboard, a Finish that failed on a
// Redis error before it recorded. It reads the archived tasks of each queue
// by archive time, newest since its last pass, and finishes those without a
// recorded final state: canceled when a cancel was requested, failed
// otherwise; the record of one that has a record is kept as long as asynq
// keeps the archived task (ArchivedFinalTTL from now). It also re-drives the
// steps after the record of every Finish that did not complete them within
// RedriveAfter (keyspace.FinishingIndex): a process that died after the record, a
// Redis error before the callback was enqueued. Several workers may sweep
// at once: Finish records once, and every step after it is idempotent.
type Sweeper struct {
	Finisher *Finisher
	Queues   []string
	Logger   *slog.Logger
	// Lookback is how far back the first pass reads (0: 24h), so exports
	// archived while no worker ran are finished when one starts.
	Lookback time.Duration
	// RedriveAfter is how long a Finish may take before its steps after the
	// record are re-driven (0: RedriveAfter).
	RedriveAfter time.Duration
	// DocumentsEvery is how often each stored source document's owners are
	// checked against asynq (0: a minute), OwnerGrace how old an owner must
	// be before it is dropped for a task asynq does not have (0: 10
	// minutes, far more than an enqueuer takes from its Put to its enqueue).
	DocumentsEvery, OwnerGrace time.Duration

	inspector *asynq.Inspector
	since     map[string]float64 // per queue: archive time already read up to
}

// sweepBatch bounds the archived tasks one pass reads per queue.
const sweepBatch = 200

// sweepOverlap re-reads the last seconds of the previous pass: asynq
// scores archived tasks in whole seconds, so a task archived in the second
// a pass ended must not be skipped.
const sweepOverlap = 2

// Run sweeps every interval until ctx ends.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.logger().Warn("finishing archived exports", "err", err)
		} else if n > 0 {
			s.logger().Info("finished exports archived without a final state", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Sweeper) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// Sweep is one pass; it returns how many exports it finished. Not safe for
// concurrent use (Run calls it from one goroutine).
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	if s.inspector == nil {
		s.inspector = asynq.NewInspectorFromRedisClient(s.Finisher.RDB)
		s.since = map[string]float64{}
		lookback := s.Lookback
		if lookback <= 0 {
			lookback = 24 * time.Hour
		}
		for _, q := range s.Queues {
			s.since[q] = float64(time.Now().Add(-lookback).Unix())
		}
	}
	// Re-driven exports are logged by redrive, not counted here: they were
	// finished already.
	finished := 0
	_, err := s.redrive(ctx)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("re-driving final steps: %w", err))
	}
	if n, err := sidestore.SweepOwners(ctx, s.Finisher.RDB, s.tasksExist, cmp.Or(s.DocumentsEvery, time.Minute),
		cmp.Or(s.OwnerGrace, 10*time.Minute), sweepBatch); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		s.logger().Info("dropped document owners that asynq no longer has (deleted from the dashboard, never enqueued)", "count", n)
	}
	for _, q := range s.Queues {
		n, err := s.sweepQueue(ctx, q)
		finished += n
		if err != nil {
			errs = append(errs, fmt.Errorf("queue %s: %w", q, err))
		}
	}
	return finished, errors.Join(errs...)
}

func (s *Sweeper) sweepQueue(ctx context.Context, queue string) (int, error) {
	rdb := s.Finisher.RDB
	entries, err := rdb.ZRangeByScoreWithScores(ctx, keyspace.AsynqArchived(queue), &redis.ZRangeBy{
		Min: strconv.FormatFloat(s.since[queue], 'f', 0, 64), Max: "+inf", Count: sweepBatch}).Result()
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	// EXPIRE answers whether the record exists and keeps it as long as
	// the archived task: a completion that raced a cancel recorded
	// "completed" for RESULT_RETENTION, and a dashboard "Run" after it
	// expired would finish the export a second time.
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			p.Expire(ctx, keyspace.Final(e.Member.(string)), ArchivedFinalTTL)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	finished := 0
	var errs []error
	for i, e := range entries {
		if cmds[i].(*redis.BoolCmd).Val() {
			continue
		}
		ok, err := s.finish(ctx, queue, e.Member.(string))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			finished++
		}
	}
	if len(errs) == 0 {
		// Next pass from just before the newest read; an error leaves the
		// window where it was, so the pass is tried again.
		s.since[queue] = max(s.since[queue], entries[len(entries)-1].Score-sweepOverlap)
	}
	return finished, errors.Join(errs...)
}

// tasksExist reports which of ids asynq has, in any queue it knows
// (asynq:queues, every queue any client enqueued to, not only this
// worker's) and any state.
func (s *Sweeper) tasksExist(ctx context.Context, ids []string) (map[string]bool, error) {
	rdb := s.Finisher.RDB
	queues, err := rdb.SMembers(ctx, keyspace.AsynqQueues).Result()
	if err != nil {
		return nil, err
	}
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			for _, q := range queues {
				p.Exists(ctx, keyspace.AsynqTask(q, id))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(ids))
	for i, id := range ids {
		for j := range queues {
			have[id] = have[id] || cmds[i*len(queues)+j].(*redis.IntCmd).Val() == 1
		}
	}
	return have, nil
}

// finish finishes one archived task, if it is an export.
func (s *Sweeper) finish(ctx context.Context, queue, taskID string) (bool, error) {
	info, err := s.inspector.GetTaskInfo(queue, taskID)
	if errors.Is(err, asynq.ErrTaskNotFound) {
		return false, nil // deleted meanwhile
	}
	if err != nil {
		return false, err
	}
	if info.Type != tasks.TypeExport || info.State != asynq.TaskStateArchived {
		return false, nil
	}
	f := spec.Final{TaskID: taskID, State: spec.StateFailed, Error: info.LastErr, Retried: info.Retried}
	if canceled, err := (Cancels{RDB: s.Finisher.RDB}).Canceled(ctx, taskID); err != nil {
		return false, err
	} else if canceled {
		f.State, f.Error = spec.StateCanceled, spec.CanceledError
	}
	if f.Error == "" {
		f.Error = "archived without an outcome: from the dashboard, or by asynq after the worker running its last attempt was lost"
	}
	var env *spec.Envelope
	if e, err := spec.DecodeEnvelope(info.Payload); err == nil {
		env = &e
		f.ManualID, f.Version, f.RequestID = e.ManualID, e.Version, e.RequestID
	}
	done, err := s.Finisher.Finish(ctx, queue, env, f)
	return done.Recorded, err
}

// redrive runs the final steps of the Finishes that began more than
// RedriveAfter ago and have not cleared their keyspace.FinishingIndex entry. Each
// entry is claimed first (its score moved to now, if no other sweep did so
// meanwhile), so that of several sweeping workers one re-drives it, and a
// failing re-drive is tried again RedriveAfter later. It returns how many
// exports it re-drove.
func (s *Sweeper) redrive(ctx context.Context) (int, error) {
	after := s.RedriveAfter
	if after <= 0 {
		after = RedriveAfter
	}
	rdb := s.Finisher.RDB
	cutoff := time.Now().Add(-after).UnixMilli()
	ids, err := rdb.ZRangeByScore(ctx, keyspace.FinishingIndex, &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(cutoff, 10), Count: sweepBatch}).Result()
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	redriven := 0
	var errs []error
	for _, id := range ids {
		claimed, err := claimScript.Run(ctx, rdb, []string{keyspace.FinishingIndex}, id, cutoff, time.Now().UnixMilli()).Int()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if claimed == 0 {
			continue // another sweep has it, or it completed meanwhile
		}
		ran, err := s.Finisher.redrive(ctx, id)
		if ran {
			redriven++
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
	}
	if redriven > 0 {
		s.logger().Info("re-drove the final steps of exports", "count", redriven)
	}
	return redriven, errors.Join(errs...)
}

// claimScript moves a keyspace.FinishingIndex entry to now if it is still older than
// the cutoff.
//
//	KEYS[1] keyspace.FinishingIndex   ARGV[1] task id   ARGV[2] cutoff (ms)   ARGV[3] now (ms)
var claimScript = redis.NewScript(`
local score = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not score or tonumber(score) > tonumber(ARGV[2]) then return 0 end
redis.call("ZADD", KEYS[1], ARGV[3], ARGV[1])
return 1
`)
