// Command enqueue requests PDF exports: export one manual version, check a
// task's status, cancel it, re-render a catalogue from a CSV, or print a
// signed reader link. It reads the same environment as the worker
// (REDIS_URL, ALLOWED_HOSTS, …) and validates with the worker's rules.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/logging"
	"github.com/pdfexport/pdfexport/internal/platform/redisconn"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
)

// Exit codes: the CLI contract (README.md, docs/ARCHITECTURE.md).
const (
	exitOK          = 0
	exitFailed      = 1 // the task failed (or was not done in time)
	exitInvalid     = 2 // invalid input or configuration; stderr names the field
	exitUnavailable = 3 // Redis or storage unreachable, or workers too old for the envelope serve its queue
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type env struct {
	environ []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

func run(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Failures reach the user as one error with an exit code, not as go-redis's
	// per-dial log lines.
	redis.SetLogger(logging.Redis{L: slog.New(slog.DiscardHandler)})
	e := env{environ: environ, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		usage(stderr)
		return exitInvalid
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		usage(stdout)
		return exitOK
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, "pdfexport enqueue", buildinfo.Long())
		return exitOK
	case "export":
		return traced(ctx, e, tracing.ServiceEnqueue, runExport, args[1:])
	case "status":
		return traced(ctx, e, tracing.ServiceEnqueue, runStatus, args[1:])
	case "cancel":
		return traced(ctx, e, tracing.ServiceEnqueue, runCancel, args[1:])
	case "batch":
		return traced(ctx, e, tracing.ServiceEnqueue, runBatch, args[1:])
	case "link":
		return runLink(ctx, e, args[1:])
	default:
		fmt.Fprintf(stderr, "enqueue: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitInvalid
	}
}

// traced runs a command with tracing as the OTEL_* variables ask (off
// unless they name an exporter or endpoint). Run from a traced script or CI
// job (TRACEPARENT), its exports join that trace.
func traced(ctx context.Context, e env, service string, cmd func(context.Context, env, []string) int, args []string) int {
	shutdown, err := tracing.Setup(ctx, service)
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue: %v\n", err)
		return exitInvalid
	}
	// A CLI must not hang on an unreachable collector at exit.
	defer tracing.Shutdown(shutdown, 2*time.Second, func(err error) { fmt.Fprintf(e.stderr, "enqueue: flushing traces: %v\n", err) })
	return cmd(tracing.FromEnviron(ctx, e.environ), e, args)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `pdfexport enqueue %s — request PDF exports

Usage:
  enqueue export --manual ID --version V (--url URL | --html-file F) [options]
  enqueue status TASK_ID [--json]
  enqueue cancel TASK_ID [--json]             stop an export: removed if not started, its render
                                              stopped if running; exit 1 if it was final already
  enqueue batch --file F.csv|- [--rate N/s] [--force] [--wait[=DUR]] [--queue batch]
                                              CSV columns manual_id,version,url
  enqueue link --manual ID --version V [--expires 24h] [--paper Letter] [--landscape]
                                              print a reader download link signed with LINK_SECRET,
                                              under API_PUBLIC_URL (no Redis needed)
  enqueue --version | --help

Run "enqueue COMMAND --help" for a command's flags.

Exit codes: 0 done, 1 task failed, 2 invalid input (stderr names the field),
3 Redis or storage unreachable.

Tracing: the OTEL_* variables (docs/OPERATING.md, "Tracing"); TRACEPARENT makes the
exports join that trace.

Configuration (environment variables):
`, buildinfo.String())
	_ = config.WriteVariables(w, "enqueue")
}

// newClient loads the configuration and builds an exportclient from it. On
// failure it prints why and returns the exit code.
func newClient(e env) (*exportclient.Client, config.Config, int) {
	cfg, err := config.Load(e.environ)
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue: %v\n", err)
		return nil, cfg, exitInvalid
	}
	c, err := redisconn.ExportClient(cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "enqueue: %v\n", err)
		return nil, cfg, exitInvalid
	}
	return c, cfg, exitOK
}

// exitFor maps an error to the exit code contract and prints it.
func exitFor(e env, err error) int {
	var fe *exportclient.FieldError
	switch {
	case errors.As(err, &fe):
		fmt.Fprintf(e.stderr, "enqueue: invalid request: %v\n", err)
		return exitInvalid
	case errors.Is(err, exportclient.ErrInvalid):
		fmt.Fprintf(e.stderr, "enqueue: invalid request: %v\n", err)
		return exitInvalid
	case errors.Is(err, exportclient.ErrUnavailable):
		fmt.Fprintf(e.stderr, "enqueue: %v\n", err)
		return exitUnavailable
	case errors.Is(err, exportclient.ErrOlderWorkers):
		// Not the request's fault: the fleet cannot serve it yet.
		fmt.Fprintf(e.stderr, "enqueue: %v\n", err)
		return exitUnavailable
	case errors.Is(err, exportclient.ErrNotFound):
		fmt.Fprintf(e.stderr, "enqueue: %v\n", err)
		return exitInvalid
	default:
		fmt.Fprintf(e.stderr, "enqueue: %v\n", err)
		return exitFailed
	}
}
