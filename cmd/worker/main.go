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
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/logging"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/worker"
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
		fmt.Fprintln(stdout, "pdfexport worker", buildinfo.Long())
		return exitOK
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "worker: unexpected argument %q (configuration is read from the environment; see --help)\n", fs.Arg(0))
		return exitUsage
	}
	cfg, err := config.Load(environ)
	if err == nil {
		err = cfg.CheckWorker()
	}
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return exitUsage
	}
	log := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	redis.SetLogger(logging.Redis{L: log})
	shutdownTracing, err := tracing.Setup(ctx, tracing.ServiceWorker)
	if err != nil {
		fmt.Fprintf(stderr, "worker: %v\n", err)
		return exitUsage
	}
	defer tracing.Shutdown(shutdownTracing, 5*time.Second, func(err error) { log.Warn("flushing traces", "err", err) })
	if tracing.Enabled() {
		log.Info("exporting traces over OTLP (OTEL_* variables)")
	}
	if err := worker.New(cfg, worker.Options{Logger: log}).Run(ctx); err != nil {
		log.Error("worker stopped", "err", err)
		if errors.Is(err, worker.ErrUnavailable) {
			return exitUnavailable
		}
		return exitFailure
	}
	return exitOK
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
	_ = config.WriteVariables(w, "worker")
}
