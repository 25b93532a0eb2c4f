package render

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
)

// Spans of a render, under the caller's span (tracing off: none; the
// stages cost one check):
//
//	render           tab slot wait, browser, pages, bytes, warnings
//	├─ render.tab           a browser context and tab, the request guard, media
//	├─ render.load          navigation (or the inline document) to the load event
//	├─ render.network_idle  no request in flight (again after layout and after wait_for)
//	├─ render.fonts         document.fonts.ready
//	├─ render.wait_for      the payload's wait_for expression
//	├─ render.anchor_marks  a manual's chapter: its anchors and headings marked
//	├─ render.print         Page.printToPDF until the stream handle
//	└─ render.stream        IO.read chunks into the sink (the caller's spans below it)
//
// Spans are started with tracing.Start: nothing is allocated with tracing off.
const scope = "github.com/pdfexport/pdfexport/internal/render"

func startRender(ctx context.Context, src Source) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, scope, "render")
	if span.IsRecording() {
		kind := "url"
		if src.HTML != "" {
			kind = "html"
		}
		span.SetAttributes(attribute.String("pdfexport.source", kind))
	}
	return ctx, span
}

func endRender(span trace.Span, st Stats, err error) {
	if span.IsRecording() {
		span.SetAttributes(
			attribute.Int64("pdfexport.render.tab_wait_ms", st.QueueWait.Milliseconds()),
			attribute.Int("pdfexport.pages", st.Pages),
			attribute.Int64("pdfexport.bytes", st.Bytes),
			attribute.Int("pdfexport.warnings", len(st.Warnings)+st.WarningsOmitted),
		)
		if err != nil {
			span.SetAttributes(attribute.Bool("pdfexport.render.retryable", Retryable(err)))
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// stages keeps one span per render stage: next ends the stage before and
// starts the next one, end ends the last one. Without a recording render
// span it does nothing.
type stages struct {
	parent context.Context
	on     bool
	cur    trace.Span
}

func newStages(ctx context.Context) *stages {
	return &stages{parent: ctx, on: trace.SpanFromContext(ctx).IsRecording()}
}

// next starts stage name and returns the context of its span (for a sink
// that should nest under it).
func (s *stages) next(name string) context.Context {
	if !s.on {
		return s.parent
	}
	s.end(nil)
	ctx, span := tracing.Start(s.parent, scope, name)
	s.cur = span
	return ctx
}

// end ends the current stage, failed with err when it is not nil.
func (s *stages) end(err error) {
	if s.cur == nil {
		return
	}
	if err != nil {
		s.cur.RecordError(err)
		s.cur.SetStatus(codes.Error, err.Error())
	}
	s.cur.End()
	s.cur = nil
}

// withSpan gives runCtx, which descends from the browser's context rather
// than the caller's, the caller's span: stage spans and the sink's spans
// nest under the render.
func withSpan(runCtx, caller context.Context) context.Context {
	if span := trace.SpanFromContext(caller); span.IsRecording() {
		return trace.ContextWithSpan(runCtx, span)
	}
	return runCtx
}
