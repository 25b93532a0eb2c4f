package exportclient

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// tracer is the global provider's: a no-op until the application installs
// one (the binaries do with OTEL_* set; see internal/platform/tracing). It is looked
// up per enqueue rather than kept, so an application that replaces its
// provider is followed.
func tracer() trace.Tracer { return otel.Tracer("github.com/pdfexport/pdfexport/exportclient") }

// w3c is the payload's propagation format, whatever propagators the
// application installed globally: the payload's fields are W3C trace
// context by contract.
var w3c propagation.TraceContext

// startEnqueue starts the producer span of an enqueue under the span of ctx
// (the HTTP API puts a caller's traceparent header there) and writes its
// context into the envelope, so the worker's span continues the trace.
// Without tracing and without a trace context in ctx, p gets no traceparent.
func startEnqueue(ctx context.Context, p *spec.Envelope, queue, key string) (context.Context, trace.Span) {
	ctx, span := tracer().Start(ctx, tasks.TypeExport+" enqueue", trace.WithSpanKind(trace.SpanKindProducer))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", queue),
			attribute.String("pdfexport.manual_id", p.ManualID),
			attribute.String("pdfexport.version", p.Version),
			attribute.String("pdfexport.artifact_key", key),
		)
	}
	if span.SpanContext().IsValid() {
		c := propagation.MapCarrier{}
		w3c.Inject(ctx, c)
		p.Traceparent, p.Tracestate = c["traceparent"], c["tracestate"]
	}
	return ctx, span
}

// endEnqueue ends the span of startEnqueue with the enqueue's outcome.
func endEnqueue(span trace.Span, job Enqueued, err error) {
	if span.IsRecording() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetAttributes(attribute.String("messaging.message.id", job.TaskID))
		}
	}
	span.End()
}
