// Package logging builds the process logger (log/slog, JSON or text) and
// adapts it to asynq's Logger interface, so queue and export events share one
// structured stream.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// New returns a logger writing to w at level (debug|info|warn|error) in
// format (json|text).
func New(w io.Writer, level, format string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(level))) // validated by config
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// Asynq adapts a slog.Logger to asynq.Logger.
type Asynq struct{ L *slog.Logger }

func (a Asynq) Debug(args ...any) { a.L.Debug(fmt.Sprint(args...), "component", "asynq") }
func (a Asynq) Info(args ...any)  { a.L.Info(fmt.Sprint(args...), "component", "asynq") }
func (a Asynq) Warn(args ...any)  { a.L.Warn(fmt.Sprint(args...), "component", "asynq") }
func (a Asynq) Error(args ...any) { a.L.Error(fmt.Sprint(args...), "component", "asynq") }

// Fatal logs and exits, as asynq's contract requires.
func (a Asynq) Fatal(args ...any) {
	a.L.Error(fmt.Sprint(args...), "component", "asynq", "fatal", true)
	os.Exit(1)
}

// Redis adapts a slog.Logger to go-redis's internal logger, at debug level:
// go-redis logs every failed dial, which during an outage would flood the
// operator's stream with what the readiness probe and metrics already say.
type Redis struct{ L *slog.Logger }

// Printf implements go-redis's internal.Logging.
func (r Redis) Printf(ctx context.Context, format string, v ...any) {
	r.L.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}
