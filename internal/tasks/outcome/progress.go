package outcome

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
)

// ProgressTTL bounds what a manual that never ends (deleted from the
// dashboard) leaves behind.
const ProgressTTL = 7 * 24 * time.Hour

// Progress counts the chapters of manuals.
type Progress struct{ RDB redis.UniversalClient }

// Start records how many distinct chapters the manual taskID has.
func (p Progress) Start(ctx context.Context, taskID string, total int) error {
	pipe := p.RDB.TxPipeline()
	pipe.HSet(ctx, keyspace.Progress(taskID), "total", total)
	pipe.Expire(ctx, keyspace.Progress(taskID), ProgressTTL)
	_, err := pipe.Exec(ctx)
	return err
}

// ChapterStored counts the chapter stored under key for the manual taskID
// (once, however often it is reported).
func (p Progress) ChapterStored(ctx context.Context, taskID, key string) error {
	pipe := p.RDB.TxPipeline()
	pipe.HSet(ctx, keyspace.Progress(taskID), "k:"+key, 1)
	pipe.Expire(ctx, keyspace.Progress(taskID), ProgressTTL)
	_, err := pipe.Exec(ctx)
	return err
}

// ChaptersDone reads a manual's progress: chapters stored and in all; ok
// is false before the manual's task started.
func ChaptersDone(ctx context.Context, rdb redis.UniversalClient, taskID string) (done, total int, ok bool, err error) {
	pipe := rdb.Pipeline()
	n := pipe.HLen(ctx, keyspace.Progress(taskID))
	t := pipe.HGet(ctx, keyspace.Progress(taskID), "total")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, 0, false, err
	}
	if t.Err() != nil {
		return 0, 0, false, nil
	}
	total, _ = strconv.Atoi(t.Val())
	return int(n.Val()) - 1, total, true, nil
}
