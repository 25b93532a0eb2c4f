package outcome

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Sweeper finishes the exports asynq archived without a Finish: a worker
// lost on the last attempt (asynq's recoverer archives the task when its
// lease expires), an "Archive" from the dashboard, a Finish that failed on a
// Redis error. It reads the archived tasks of each queue by archive time,
// newest since its last pass, and finishes those without a recorded final
// state: canceled when a cancel was requested, failed otherwise. Several
// workers may sweep at once: Finish records once.
type Sweeper struct {
	Finisher *Finisher
	Queues   []string
	Logger   *slog.Logger
	// Lookback is how far back the first pass reads (0: 24h), so exports
	// archived while no worker ran are finished when one starts.
	Lookback time.Duration

	inspector *asynq.Inspector
	since     map[string]float64 // per queue: archive time already read up to
}

// sweepBatch bounds the archived tasks one pass reads per queue.
const sweepBatch = 200

// sweepOverlap re-reads the last seconds of the previous pass: asynq
// scores archived tasks in whole seconds, so a task archived in the second
// a pass ended must not be skipped.
const sweepOverlap = 2

// archivedKey is asynq's sorted set of a queue's archived tasks, scored by
// archive time in unix seconds (asynq/internal/base.ArchivedKey).
func archivedKey(queue string) string { return "asynq:{" + queue + "}:archived" }

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
	finished := 0
	var errs []error
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
	entries, err := rdb.ZRangeByScoreWithScores(ctx, archivedKey(queue), &redis.ZRangeBy{
		Min: strconv.FormatFloat(s.since[queue], 'f', 0, 64), Max: "+inf", Count: sweepBatch}).Result()
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			p.Exists(ctx, FinalKey(e.Member.(string)))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	finished := 0
	var errs []error
	for i, e := range entries {
		if cmds[i].(*redis.IntCmd).Val() == 1 {
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

// finish finishes one archived task, if it is an export.
func (s *Sweeper) finish(ctx context.Context, queue, taskID string) (bool, error) {
	info, err := s.inspector.GetTaskInfo(queue, taskID)
	if errors.Is(err, asynq.ErrTaskNotFound) {
		return false, nil // deleted meanwhile
	}
	if err != nil {
		return false, err
	}
	if info.Type != spec.TaskType || info.State != asynq.TaskStateArchived {
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
