package lock

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
)

// Spans: "render gate" for Enter, with an event for how it let the caller
// through (acquired, released, contended, fail_open) and, when it waited,
// a link to the span of the holder it waited for; "render lock release"
// for Release. Lease loss is an event on the span the lock was acquired
// under. With tracing off there are no spans (tracing.Start allocates
// nothing) and tokens name none.
const scope = "github.com/pdfexport/pdfexport/internal/lock"

// holderToken is a new lock token. When ctx carries a recording span, the
// token names it ("<random>.<trace id>-<span id>"), so that a waiter can
// say which render it waited for; the token is still compared as a whole.
func holderToken(ctx context.Context) string {
	token := newToken()
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		sc := span.SpanContext()
		token += "." + sc.TraceID().String() + "-" + sc.SpanID().String()
	}
	return token
}

// holderSpan reads the span a holder's token names.
func holderSpan(token string) (trace.SpanContext, bool) {
	_, ids, ok := strings.Cut(token, ".")
	if !ok {
		return trace.SpanContext{}, false
	}
	tid, sid, ok := strings.Cut(ids, "-")
	if !ok {
		return trace.SpanContext{}, false
	}
	traceID, err1 := trace.TraceIDFromHex(tid)
	spanID, err2 := trace.SpanIDFromHex(sid)
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, Remote: true})
	return sc, sc.IsValid()
}

func startGate(ctx context.Context, id string) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, scope, "render gate")
	if span.IsRecording() {
		span.SetAttributes(attribute.String("pdfexport.lock.id", id))
	}
	return ctx, span
}

// gateContended records that another holder has the lock (once per
// Enter: the first time).
func gateContended(span trace.Span, rep acquireReply) {
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attribute.Int64("pdfexport.lock.held_for_ms", rep.heldFor.Milliseconds())}
	if sc, ok := holderSpan(rep.holder); ok {
		attrs = append(attrs, attribute.String("pdfexport.lock.holder_trace_id", sc.TraceID().String()),
			attribute.String("pdfexport.lock.holder_span_id", sc.SpanID().String()))
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("pdfexport.link", "waited for this render")}})
	}
	span.AddEvent("contended", trace.WithAttributes(attrs...))
}

func endGate(span trace.Span, e Entry, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int64("pdfexport.lock.waited_ms", e.Waited.Milliseconds()))
		switch {
		case err != nil:
			span.SetAttributes(attribute.String("pdfexport.lock.result", "error"),
				attribute.Bool("pdfexport.lock.wait_timeout", errors.Is(err, ErrWaitTimeout)))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		case e.Result == Acquired:
			span.SetAttributes(attribute.String("pdfexport.lock.result", e.Result.String()))
			span.AddEvent("acquired", trace.WithAttributes(attribute.Int64("pdfexport.lock.fence", e.Lease.Fence())))
		case e.Result == Released:
			span.SetAttributes(attribute.String("pdfexport.lock.result", e.Result.String()))
			span.AddEvent("released by the holder", trace.WithAttributes(attribute.String("pdfexport.lock.outcome", string(e.Outcome.Status)),
				attribute.String("pdfexport.etag", e.Outcome.ETag)))
		case e.Result == FailOpen:
			span.SetAttributes(attribute.String("pdfexport.lock.result", e.Result.String()))
			var cause string
			if e.Cause != nil {
				cause = e.Cause.Error()
			}
			span.AddEvent("fail_open", trace.WithAttributes(attribute.String("pdfexport.lock.cause", cause)))
		}
	}
	span.End()
}

func startRelease(ctx context.Context, l *Lease, o Outcome) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, scope, "render lock release")
	if span.IsRecording() {
		span.SetAttributes(attribute.String("pdfexport.lock.id", l.id), attribute.Int64("pdfexport.lock.fence", l.fence),
			attribute.String("pdfexport.lock.outcome", string(o.Status)),
			attribute.Int64("pdfexport.lock.held_ms", time.Since(l.acquired).Milliseconds()))
	}
	return ctx, span
}

func endRelease(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// leaseLost records the loss on the span the lease was taken under.
func leaseLost(ctx context.Context, why string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("render lock lost", trace.WithAttributes(attribute.String("pdfexport.lock.reason", why)))
	}
}
