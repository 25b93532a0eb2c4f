// Command api serves the HTTP enqueue API (internal/api) on API_ADDR for API
// servers that are not written in Go. It reads the same environment as the
// worker (REDIS_URL, ALLOWED_HOSTS, API_TOKEN, …) and validates with the
// worker's rules. Exit codes: 0 stopped on SIGTERM/SIGINT, 1 failed, 2 bad
// configuration or listen address.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/api"
	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/logging"
	"github.com/pdfexport/pdfexport/internal/platform/redisconn"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnavailable = 3 // artifact storage could not be opened
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help", "-help", "help":
			fmt.Fprintf(stdout, "pdfexport api %s\n\nServes POST /v1/exports, GET /v1/exports/{id}, reader links GET /v1/manuals/{manual_id}/{version}.pdf\n(MANUALS_FILE, LINK_SECRET) and GET /healthz on API_ADDR (contract: api/openapi.yaml).\n\nConfiguration (environment variables):\n", buildinfo.String())
			_ = config.WriteVariables(stdout, "api")
			return exitOK
		case "--version", "-version", "version":
			fmt.Fprintln(stdout, "pdfexport api", buildinfo.Long())
			return exitOK
		}
		fmt.Fprintf(stderr, "api: unexpected argument %q (configuration is read from the environment; see --help)\n", args[0])
		return exitUsage
	}
	cfg, err := config.Load(environ)
	if err != nil {
		fmt.Fprintf(stderr, "api: %v\n", err)
		return exitUsage
	}
	log := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	redis.SetLogger(logging.Redis{L: log})
	shutdownTracing, err := tracing.Setup(ctx, tracing.ServiceAPI)
	if err != nil {
		fmt.Fprintf(stderr, "api: %v\n", err)
		return exitUsage
	}
	defer tracing.Shutdown(shutdownTracing, 5*time.Second, func(err error) { log.Warn("flushing traces", "err", err) })
	client, err := redisconn.ExportClient(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "api: %v\n", err)
		return exitUsage
	}
	defer client.Close()
	var bad *config.Error
	switch err := api.Run(ctx, cfg, cfg.APIAddr, client, log); {
	case errors.As(err, &bad):
		fmt.Fprintf(stderr, "api: %v\n", err)
		return exitUsage
	case errors.Is(err, api.ErrListen):
		fmt.Fprintf(stderr, "api: API_ADDR: %v\n", err)
		return exitUsage
	case errors.Is(err, api.ErrStorage):
		fmt.Fprintf(stderr, "api: %v\n", err)
		return exitUnavailable
	case err != nil:
		log.Error("api stopped", "err", err)
		return exitFailure
	}
	return exitOK
}
