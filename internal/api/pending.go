package api

import (
	"log/slog"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/redisconn"
)

// pending reads how many exports wait in queue, for Gotenberg's queue-size
// gauge; nil when the queue's Redis cannot be described (the gauge then
// reads 0). A failed read is 0 too: a scrape must not fail for it. stop
// closes its connection.
func pending(cfg config.Config, queue string, log *slog.Logger) (read func() float64, stop func()) {
	opt, err := redisconn.QueueOpt(cfg)
	if err != nil {
		return nil, func() {}
	}
	insp := asynq.NewInspector(opt)
	return func() float64 {
		info, err := insp.GetQueueInfo(queue)
		if err != nil {
			log.Debug("gotenberg metrics: reading the queue", "queue", queue, "err", err)
			return 0
		}
		return float64(info.Pending)
	}, func() { _ = insp.Close() }
}
