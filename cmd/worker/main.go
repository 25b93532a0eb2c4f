// Command worker processes pdf:export tasks: it renders each artifact once
// across all workers through the Redis render gate and one long-lived
// Chromium, stores PDFs create-only, and serves health, readiness and
// metrics on ADMIN_ADDR. Configuration is the environment (see --help).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/admin"
	"github.com/pdfexport/pdfexport/internal/buildinfo"
	"github.com/pdfexport/pdfexport/internal/config"
	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/logging"
	"github.com/pdfexport/pdfexport/internal/redisconn"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2 // bad flags or configuration
	exitUnavailable = 3 // a dependency (Redis, storage, Chromium) could not be reached at start
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() { usage(stdout) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *showVersion {
		fmt.Fprintln(stdout, "pdfexport worker", buildinfo.String())
		return exitOK
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "worker: unexpected argument %q (configuration is read from the environment; see --help)\n", fs.Arg(0))
		return exitUsage
	}
	cfg, err := config.Load(environ)
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return exitUsage
	}
	log := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	redis.SetLogger(logging.Redis{L: log})
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("worker stopped", "err", err)
		var unavailable *unavailableError
		if errors.As(err, &unavailable) {
			return exitUnavailable
		}
		return exitFailure
	}
	return exitOK
}

type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

func serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	metrics := admin.NewMetrics()

	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	store, err := storage.Open(startCtx, storage.Config{URL: cfg.StorageURL, S3Endpoint: cfg.S3Endpoint, S3Region: cfg.S3Region,
		S3ForcePathStyle: cfg.S3ForcePathStyle, S3CreateBucket: cfg.S3CreateBucket, PresignTTL: cfg.S3PresignTTL, Logger: log})
	if err != nil {
		return &unavailableError{fmt.Errorf("opening storage %s: %w", cfg.StorageURL, err)}
	}
	if err := store.Ping(startCtx); err != nil {
		return &unavailableError{fmt.Errorf("storage %s not usable: %w", store.Describe(), err)}
	}
	if files, ok := store.(*storage.File); ok {
		// Temp files of uploads that a crash interrupted; no upload lives a day.
		if n, err := files.RemoveStaleTemp(startCtx, 24*time.Hour); err != nil {
			log.Warn("removing stale temp files", "err", err)
		} else if n > 0 {
			log.Info("removed temp files left by a crash", "count", n)
		}
	}

	renderer, err := render.New(render.Config{ChromiumPath: cfg.ChromiumPath, Concurrency: cfg.RenderConcurrency,
		Timeout: cfg.RenderTimeout, MaxRendersPerBrowser: cfg.RenderMaxPerBrowser, AllowedHosts: cfg.Allowed, Logger: log,
		Observer: metrics})
	if err != nil {
		return fmt.Errorf("configuring the renderer: %w", err)
	}
	defer func() {
		if err := renderer.Close(); err != nil {
			log.Warn("closing Chromium", "err", err)
		}
	}()
	if err := renderer.Start(startCtx); err != nil {
		return &unavailableError{fmt.Errorf("starting Chromium: %w", err)}
	}

	lockRedis, err := redisconn.LockClient(cfg)
	if err != nil {
		return err
	}
	defer lockRedis.Close()
	mutex := lock.NewMutex(lockRedis, lock.Config{TTL: cfg.LockTTL, WaitTimeout: cfg.LockWaitTimeout, Grace: cfg.LockGrace,
		FailOpen: cfg.LockFailOpen, Logger: log, Observer: metrics})

	handler, err := tasks.NewHandler(tasks.Config{Store: store, Renderer: renderer, Gate: lock.NewGate(mutex),
		AllowedHosts: cfg.Allowed, Namespace: cfg.StorageURL, Logger: log, Observer: metrics})
	if err != nil {
		return err
	}

	queueOpt, err := redisconn.QueueOpt(cfg)
	if err != nil {
		return err
	}
	srv := asynq.NewServer(queueOpt, asynq.Config{
		Concurrency:       cfg.WorkerConcurrency,
		Queues:            cfg.QueueWeights,
		TaskCheckInterval: cfg.TaskCheckInterval,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		RetryDelayFunc:    retryDelay,
		Logger:            logging.Asynq{L: log},
		LogLevel:          asynqLevel(cfg.LogLevel),
		BaseContext:       func() context.Context { return context.WithoutCancel(ctx) },
	})
	mux := asynq.NewServeMux()
	mux.Use(taskDeadline(cfg.TaskTimeout))
	mux.Handle(spec.TaskType, handler)

	inspector := asynq.NewInspector(queueOpt)
	defer inspector.Close()
	metrics.WithQueueMetrics(inspector)
	var dashboard *admin.DashboardConfig
	if cfg.Dashboard {
		dashboard = &admin.DashboardConfig{Redis: queueOpt, User: cfg.DashboardUser, Password: cfg.DashboardPassword, ReadOnly: cfg.DashboardReadOnly}
	}
	adminSrv, adminDone, err := startAdmin(cfg, log, metrics, dashboard, map[string]admin.Check{
		"redis":    func(ctx context.Context) error { return srv.Ping() },
		"locks":    func(ctx context.Context) error { return lockRedis.Ping(ctx).Err() },
		"storage":  store.Ping,
		"chromium": renderer.Ping,
	})
	if err != nil {
		return &unavailableError{err}
	}

	if err := srv.Start(mux); err != nil {
		return &unavailableError{fmt.Errorf("starting the queue server: %w", err)}
	}
	log.Info("worker started", "version", buildinfo.String(), "queues", cfg.Queues, "concurrency", cfg.WorkerConcurrency,
		"render_concurrency", cfg.RenderConcurrency, "storage", store.Describe(), "admin", cfg.AdminAddr,
		"allowed_hosts", cfg.Allowed.String())

	<-ctx.Done()
	log.Info("shutting down: no new tasks; renders in flight get SHUTDOWN_TIMEOUT", "timeout", cfg.ShutdownTimeout)
	srv.Shutdown() // waits up to ShutdownTimeout; unfinished tasks go back to the queue
	if adminSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = adminSrv.Shutdown(sctx)
		cancel()
		<-adminDone
	}
	log.Info("worker stopped")
	return nil
}

// taskDeadline bounds one attempt of a task, waiting for another worker's
// render included, whatever deadline the enqueuer set.
func taskDeadline(d time.Duration) asynq.MiddlewareFunc {
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next.ProcessTask(ctx, t)
		})
	}
}

// retryDelay backs off exponentially from 1s to 5m with ±25 % jitter, so a
// fleet retrying after a shared outage does not return in lock-step.
func retryDelay(n int, _ error, _ *asynq.Task) time.Duration {
	d := time.Second << min(n, 9)
	d = min(d, 5*time.Minute)
	jitter := time.Duration(rand.Int64N(int64(d) / 2))
	return d*3/4 + jitter
}

func asynqLevel(level string) asynq.LogLevel {
	switch strings.ToLower(level) {
	case "debug":
		return asynq.DebugLevel
	case "warn":
		return asynq.WarnLevel
	case "error":
		return asynq.ErrorLevel
	}
	return asynq.InfoLevel
}

func startAdmin(cfg config.Config, log *slog.Logger, metrics *admin.Metrics, dashboard *admin.DashboardConfig, checks map[string]admin.Check) (*http.Server, <-chan struct{}, error) {
	if cfg.AdminAddr == "" {
		return nil, nil, nil
	}
	ln, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("admin listener on ADMIN_ADDR=%s: %w", cfg.AdminAddr, err)
	}
	srv := &http.Server{
		Handler:           admin.Handler(admin.Config{Metrics: metrics, Checks: checks, Version: buildinfo.String(), Dashboard: dashboard}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin server failed", "err", err)
		}
	}()
	return srv, done, nil
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `pdfexport worker %s

Processes pdf:export tasks from Redis: each artifact is rendered once by
headless Chromium across all workers, stored create-only, and reused by every
other request. Serves /healthz, /readyz and /metrics on ADMIN_ADDR.

Usage: worker [--version] [--help]

Exit codes: 0 stopped cleanly, 1 failed, 2 invalid configuration,
3 Redis, storage or Chromium unreachable at start.

Configuration (environment variables):
`, buildinfo.String())
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, v := range config.Variables() {
		def := v.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Name, def, v.Doc)
	}
	_ = tw.Flush()
}
