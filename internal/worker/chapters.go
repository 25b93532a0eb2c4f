package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/queue/doorbell"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// chapterQueue queues a manual's chapters as pdf:chapter tasks on the
// manual's queue and rings the doorbell once, so idle workers take them at
// once.
type chapterQueue struct {
	client  *asynq.Client
	rdb     redis.UniversalClient
	retries int
	timeout time.Duration
}

// chapterTaskID names chapter i of a manual: a retry of the manual queues
// no second task for it while the first is kept.
func chapterTaskID(manualTask string, i int) string {
	return manualTask + "-chapter-" + strconv.Itoa(i)
}

func (q chapterQueue) EnqueueChapters(ctx context.Context, queue string, chapters []spec.ChapterTask) error {
	var errs []error
	for _, ct := range chapters {
		t, err := tasks.NewChapterTask(ct, asynq.TaskID(chapterTaskID(ct.ManualTask, ct.Index)), asynq.Queue(queue),
			asynq.MaxRetry(q.retries), asynq.Timeout(q.timeout))
		if err != nil {
			return err
		}
		_, err = q.client.EnqueueContext(ctx, t)
		if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
			errs = append(errs, fmt.Errorf("chapter %d: %w", ct.Index, err))
		}
	}
	_ = doorbell.Ring(ctx, q.rdb, queue)
	return errors.Join(errs...)
}
