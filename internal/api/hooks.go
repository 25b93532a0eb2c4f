package api

import (
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/gotenberg"
	"github.com/pdfexport/pdfexport/internal/platform/logging"
)

// hookServer serves the queue of the Gotenberg routes' webhook deliveries
// in bin/api (the workers do not serve it): every bin/api takes its share,
// and a delivery a stopped one was making is taken by the next, from
// Redis. stop shuts it down, handing the deliveries in flight back.
func hookServer(opt asynq.RedisConnOpt, h asynq.Handler, log *slog.Logger) (stop func(), err error) {
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:     gotenberg.MaxWebhooks,
		Queues:          map[string]int{gotenberg.WebhookQueue: 1},
		RetryDelayFunc:  hookRetryDelay,
		ShutdownTimeout: 5 * time.Second,
		Logger:          logging.Asynq{L: log},
		LogLevel:        asynq.WarnLevel,
	})
	mux := asynq.NewServeMux()
	mux.Handle(gotenberg.TypeWebhook, h)
	if err := srv.Start(mux); err != nil {
		return nil, err
	}
	return srv.Shutdown, nil
}

// hookRetryDelay backs off as Gotenberg's webhook client does, from 1 s
// to 30 s (its webhook-retry-min-wait and -max-wait), with jitter.
func hookRetryDelay(n int, _ error, _ *asynq.Task) time.Duration {
	d := min(time.Second<<min(n, 5), 30*time.Second)
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2))
}
