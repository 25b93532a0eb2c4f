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

	"go.opentelemetry.io/otel/trace"
)

// New returns a logger writing to w at level (debug|info|warn|error) in
// format (json|text). Records logged with a context that carries a span
// (the ...Context methods) have its trace_id and span_id (WithTrace).
func New(w io.Writer, level, format string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(level))) // validated by config
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "text" {
		return slog.New(WithTrace(slog.NewTextHandler(w, opts)))
	}
	return slog.New(WithTrace(slog.NewJSONHandler(w, opts)))
}

// WithTrace wraps h so that a record whose context carries a valid span
// context (an active span, or a trace context received from a caller) gets
// trace_id and span_id attributes: the log line and the trace find each
// other. Records logged without a context (Info rather than InfoContext)
// are passed through unchanged.
func WithTrace(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r = r.Clone() // the caller's record may share its attribute storage
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
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
