package callback

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// Spans: pdf:callback (consumer) continues the trace of the export that
// became final (the task's traceparent); with tracing enabled the POST is an
// otelhttp client span under it, and the receiver gets a traceparent header.
//
// Spans are started with tracing.Start: nothing is allocated with tracing off.
const scope = "github.com/pdfexport/pdfexport/internal/delivery/callback"

// transport wraps tr with otelhttp when tracing is enabled (off: tr as is,
// nothing added to a delivery).
func transport(tr http.RoundTripper) http.RoundTripper {
	if !tracing.Enabled() {
		return tr
	}
	return otelhttp.NewTransport(tr, otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
		return "callback POST"
	}))
}

func startDelivery(ctx context.Context, ct tasks.Callback) (context.Context, trace.Span) {
	if spec.ValidTraceparent(ct.Traceparent) {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": ct.Traceparent, "tracestate": ct.Tracestate})
	}
	ctx, span := tracing.StartKind(ctx, scope, tasks.TypeCallback, trace.SpanKindConsumer)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("pdfexport.delivery", ct.Delivery), attribute.String("url.full", redact.URL(ct.URL)))
	}
	return ctx, span
}

func endDelivery(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
