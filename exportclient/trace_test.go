package exportclient_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestEnqueue_WritesTheTraceContext: the payload carries the producer span
// under the caller's span when tracing is on; without tracing, the trace
// context ctx carries (received from a caller) travels as it is; with
// neither, the payload has no traceparent.
func TestEnqueue_WritesTheTraceContext(t *testing.T) {
	srv := testsupport.StartRedis(t)
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	payload := func(ctx context.Context, r exportclient.Request) spec.Envelope {
		t.Helper()
		job, err := c.Enqueue(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		info, err := insp.GetTaskInfo(job.Queue, job.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := spec.DecodeEnvelope(info.Payload)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	req := exportclient.Request{ManualID: "m", Version: "1", HTML: "<p>x"}

	// No tracing, no context: nothing written (earlier workers still read it).
	if p := payload(context.Background(), req); p.Traceparent != "" || p.Tracestate != "" {
		t.Errorf("without a trace context: %q %q", p.Traceparent, p.Tracestate)
	}

	// No tracing, a received context: passed on as it is.
	remote := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "congo=t61rcWkgMzE"})
	if p := payload(remote, req); p.Traceparent != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" || p.Tracestate != "congo=t61rcWkgMzE" {
		t.Errorf("received context: %q %q", p.Traceparent, p.Tracestate)
	}

	// Tracing on: the producer span, a child of the caller's span.
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })
	ctx, parent := tp.Tracer("caller").Start(context.Background(), "handle request")
	p := payload(ctx, req)
	parent.End()
	var producer sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "pdf:export enqueue" {
			producer = s
		}
	}
	if producer == nil {
		t.Fatalf("no enqueue span in %v", exp.GetSpans())
	}
	sc := producer.SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if p.Traceparent != want || sc.TraceID() != parent.SpanContext().TraceID() || producer.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("traceparent %q, want %q (the enqueue span under the caller's)", p.Traceparent, want)
	}
	if producer.SpanKind() != trace.SpanKindProducer {
		t.Errorf("kind %v", producer.SpanKind())
	}

	// A raw request cannot carry a trace context of its own: the
	// envelope's is the caller's context.
	if _, err := exportclient.DecodePayload([]byte(`{"v":1,"manual_id":"m","version":"1","source":{"html":"x"},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`)); !errors.Is(err, exportclient.ErrEnvelopeOnly) {
		t.Errorf("a raw request with a traceparent: %v, want ErrEnvelopeOnly", err)
	}
}
