package export

import (
	"context"
	"errors"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// Spans of an export attempt (tracing off: none, see tracing.Start):
//
//	pdf:export (consumer; a child of the enqueue span the payload's traceparent names)
//	├─ site.discover       a source.site's navigation and revisions (internal/tasks/site)
//	├─ render gate         internal/lock: acquired | released | fail_open, the holder waited for
//	├─ render              internal/render: render.load, render.network_idle, render.fonts,
//	│  │                   render.wait_for, render.print, render.stream
//	│  └─ storage upload   (under render.stream: the PDF streams into storage)
//	└─ render lock release internal/lock
//
// A manual from chapters adds, under the manual's pdf:export:
//
//	manual.lookup          which chapters storage holds already
//	manual.queue           its missing chapters queued for the fleet
//	(each chapter's render gate, render and storage upload, as above)
//	storage download       a stored chapter copied into the workspace
//	manual.inspect         the chapters' page counts and titles
//	manual.contents        the table of contents, each print a render
//	manual.decorations     the sheet of running headers and footers
//	manual.assemble        the manual written from its parts (stamping,
//	                       links, outline), streamed into the sink
//
// Spans are started with tracing.Start: nothing is allocated with tracing off.
const scope = "github.com/pdfexport/pdfexport/internal/tasks/export"

// startExport starts the consumer span of one attempt of a pdf:export task,
// continuing the trace its payload names (a malformed traceparent, which
// Validate then refuses, starts no trace of its own).
func startExport(ctx context.Context, taskID string, p spec.Envelope, decodeErr error) (context.Context, trace.Span) {
	if decodeErr == nil && p.Traceparent != "" && spec.ValidTraceparent(p.Traceparent) {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": p.Traceparent, "tracestate": p.Tracestate})
	}
	ctx, span := tracing.StartKind(ctx, scope, tasks.TypeExport, trace.SpanKindConsumer)
	if !span.IsRecording() {
		return ctx, span
	}
	queue, _ := asynq.GetQueueName(ctx)
	retried, _ := asynq.GetRetryCount(ctx)
	span.SetAttributes(
		attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.destination.name", queue),
		attribute.String("messaging.message.id", taskID),
		attribute.String("pdfexport.task_id", taskID),
		attribute.Int("pdfexport.retry", retried),
	)
	if decodeErr == nil {
		span.SetAttributes(
			attribute.String("pdfexport.manual_id", p.ManualID),
			attribute.String("pdfexport.version", p.Version),
			attribute.String("pdfexport.request_id", p.RequestID),
			attribute.Bool("pdfexport.force", p.Force),
		)
		if p.ManualID != "" && p.Version != "" {
			// The same key before and after html_ref is resolved.
			span.SetAttributes(attribute.String("pdfexport.artifact_key", p.ArtifactKey()))
		}
	}
	return ctx, span
}

// endExport ends the span of startExport with the attempt's outcome:
// rendered | reused | rejected | canceled | failed (for good) | retry.
func endExport(span trace.Span, res *spec.Result, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	outcome := "retry"
	switch {
	case err == nil && res != nil && res.Rendered:
		outcome = "rendered"
	case err == nil:
		outcome = "reused"
	case errors.Is(err, ErrCanceled):
		outcome = "canceled"
	case errors.Is(err, spec.ErrInvalid):
		outcome = "rejected"
	case errors.Is(err, asynq.SkipRetry):
		outcome = "failed"
	}
	span.SetAttributes(attribute.String("pdfexport.outcome", outcome))
	if res != nil {
		span.SetAttributes(
			attribute.Int64("pdfexport.bytes", res.Bytes),
			attribute.Int("pdfexport.pages", res.Pages),
			attribute.Bool("pdfexport.fail_open", res.FailOpen),
			attribute.Int64("pdfexport.render_ms", res.RenderMS),
			attribute.Int64("pdfexport.waited_ms", res.WaitedMS),
			attribute.Int("pdfexport.warnings", len(res.Warnings)+res.WarningsOmitted),
		)
	}
	fail(span, err)
	span.End()
}

// startUpload starts the span of streaming the PDF into storage.
func startUpload(ctx context.Context, key string, replace bool) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, scope, "storage upload")
	if span.IsRecording() {
		op := "create"
		if replace {
			op = "replace"
		}
		span.SetAttributes(attribute.String("pdfexport.artifact_key", key), attribute.String("pdfexport.storage.op", op))
	}
	return ctx, span
}

func endUpload(span trace.Span, obj storage.Object, err error) {
	if span.IsRecording() {
		switch {
		case errors.Is(err, storage.ErrExists), errors.Is(err, storage.ErrPreconditionFailed):
			span.AddEvent("stored by another worker first; ours discarded")
		case err != nil:
			fail(span, err)
		default:
			span.SetAttributes(attribute.Int64("pdfexport.bytes", obj.Size), attribute.String("pdfexport.etag", obj.ETag))
		}
	}
	span.End()
}

// startStep starts the span of one step of a manual's export; end ends
// it, failed with err when it is not nil.
func startStep(ctx context.Context, name string) (context.Context, func(err error)) {
	ctx, span := tracing.Start(ctx, scope, name)
	return ctx, func(err error) {
		fail(span, err)
		span.End()
	}
}

// fail marks span as failed with err (nil: nothing).
func fail(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// startDiscovery starts the span of a source.site's discovery: reading
// its navigation and its chapters' revisions.
func startDiscovery(ctx context.Context, siteURL string) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, scope, "site.discover")
	if span.IsRecording() {
		span.SetAttributes(attribute.String("pdfexport.site.url", redact.URL(siteURL)))
	}
	return ctx, span
}

func endDiscovery(span trace.Span, d Discovery, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("pdfexport.site.nav", d.Nav), attribute.Int("pdfexport.site.chapters", len(d.Chapters)),
			attribute.Int("pdfexport.site.requests", d.Requests))
		if err != nil {
			fail(span, redact.Error(err))
		}
	}
	span.End()
}
