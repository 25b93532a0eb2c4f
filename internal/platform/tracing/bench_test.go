package tracing

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const benchScope = "github.com/pdfexport/pdfexport/bench"

// span is what the instrumented code does per span: start, set attributes
// only when recording, end.
func span(ctx context.Context, start func(context.Context, string) (context.Context, trace.Span)) {
	_, s := start(ctx, "stage")
	if s.IsRecording() {
		s.SetAttributes(attribute.String("pdfexport.artifact_key", "ops-guide/1/0123456789abcdef.pdf"), attribute.Int("pdfexport.pages", 3))
	}
	s.End()
}

func viaStart(ctx context.Context, name string) (context.Context, trace.Span) {
	return Start(ctx, benchScope, name)
}

func viaGlobal(ctx context.Context, name string) (context.Context, trace.Span) {
	return otel.Tracer(benchScope).Start(ctx, name)
}

// BenchmarkSpan is the cost of one span: with tracing off through Start (the
// worker's packages), and through the global provider as OpenTelemetry
// leaves it without an SDK (exportclient, a library that cannot know
// whether its application traces), alone and under a trace context received
// from a caller; and with tracing on (sampled, exported to nowhere).
func BenchmarkSpan(b *testing.B) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	remote := trace.ContextWithRemoteSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	for _, bc := range []struct {
		name  string
		ctx   context.Context
		start func(context.Context, string) (context.Context, trace.Span)
		on    bool
	}{
		{"off/tracing.Start", context.Background(), viaStart, false},
		{"off/tracing.Start-remote-parent", remote, viaStart, false},
		{"off/otel-global", context.Background(), viaGlobal, false},
		{"off/otel-global-remote-parent", remote, viaGlobal, false},
		{"on/tracing.Start", context.Background(), viaStart, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.on {
				b.Cleanup(Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))))
			}
			b.ReportAllocs()
			for range b.N {
				span(bc.ctx, bc.start)
			}
		})
	}
}
