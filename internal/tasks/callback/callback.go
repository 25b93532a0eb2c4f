// Package callback is the pdf:callback task's handler: one attempt at
// delivering a final export's outcome, through the sender of
// internal/delivery/callback, in the trace of the export that became
// final. A refusal (no CALLBACK_SECRET, a host off CALLBACK_ALLOWED_HOSTS,
// a malformed task) ends the task; any other failure is retried by the
// queue with its backoff.
package callback

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/internal/delivery/callback"
	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// Sender delivers one outcome (callback.Deliverer).
type Sender interface {
	// Post delivers o once; an error wrapping callback.ErrRefused is
	// final.
	Post(ctx context.Context, o callback.Outcome) error
	// Refuse counts and logs a callback that will never be delivered.
	Refuse(err error, rawURL string) error
}

// Handler is the asynq handler of pdf:callback tasks.
type Handler struct{ send Sender }

// New returns the handler delivering through send.
func New(send Sender) *Handler { return &Handler{send: send} }

// scope is the instrumentation scope of the pdf:callback spans.
const scope = "github.com/pdfexport/pdfexport/internal/tasks/callback"

// ProcessTask implements asynq.Handler: nil once the receiver answered 2xx;
// an error (retried with backoff) on any other answer or a network failure;
// a SkipRetry error when the delivery is refused or the task is malformed.
func (h *Handler) ProcessTask(ctx context.Context, t *asynq.Task) (rerr error) {
	ct, err := tasks.DecodeCallback(t.Payload())
	if err != nil {
		return fmt.Errorf("%w: %w", h.send.Refuse(fmt.Errorf("%w: %w", callback.ErrRefused, err), ""), asynq.SkipRetry)
	}
	ctx, span := startDelivery(ctx, ct)
	defer func() { endDelivery(span, rerr) }()
	err = h.send.Post(ctx, callback.Outcome{URL: ct.URL, Body: ct.Body, Delivery: ct.Delivery})
	if errors.Is(err, callback.ErrRefused) {
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	return err
}

// startDelivery starts the pdf:callback span (consumer) in the trace of
// the export that became final (the task's traceparent). Started with
// tracing.StartKind: nothing is allocated with tracing off.
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
