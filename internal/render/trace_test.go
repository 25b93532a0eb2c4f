package render

import (
	"context"
	"io"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestRender_StageSpans: a render is a span under the caller's, with one
// child per stage in order, and the sink runs under the stream stage's span;
// a render that fails marks its span and the failing stage.
func TestRender_StageSpans(t *testing.T) {
	// Serial (no t.Parallel): it installs the process-wide tracer provider,
	// which would record the renders of parallel tests too.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(tracing.Install(tp))
	r := newRenderer(t, Config{})

	ctx, parent := tp.Tracer("test").Start(context.Background(), "export")
	var sinkSpan trace.SpanContext
	_, err := r.Render(ctx, Source{HTML: `<p>traced</p><script>window.ready = true</script>`}, spec.Options{WaitFor: "window.ready"}.Settings(),
		func(ctx context.Context, pdf io.Reader) error {
			_, s := tp.Tracer("test").Start(ctx, "upload")
			sinkSpan = s.SpanContext()
			defer s.End()
			_, err := io.Copy(io.Discard, pdf)
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	parent.End()

	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		byID[s.SpanContext().SpanID()] = s
	}
	var render sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "render" {
			render = s
		}
	}
	if render == nil || render.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("render span %v", render)
	}
	var stages []string
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() == render.SpanContext().SpanID() {
			stages = append(stages, s.Name())
		}
	}
	want := []string{"render.tab", "render.load", "render.network_idle", "render.fonts", "render.wait_for", "render.network_idle", "render.print", "render.stream"}
	if !slices.Equal(stages, want) {
		t.Errorf("stages %v, want %v", stages, want)
	}
	up := byID[sinkSpan.SpanID()]
	if up == nil || byID[up.Parent().SpanID()] == nil || byID[up.Parent().SpanID()].Name() != "render.stream" {
		t.Errorf("the sink's span is not under render.stream")
	}

	// A failing render: the span and its stage are errors.
	rec2 := tracetest.NewSpanRecorder()
	tp.RegisterSpanProcessor(rec2)
	ctx, parent = tp.Tracer("test").Start(context.Background(), "export")
	_, err = r.Render(ctx, Source{HTML: `<p>x</p>`}, spec.Options{PageRanges: "50-60"}.Settings(), func(ctx context.Context, pdf io.Reader) error {
		_, err := io.Copy(io.Discard, pdf)
		return err
	})
	parent.End()
	if err == nil {
		t.Fatal("printing pages 50-60 of one page succeeded")
	}
	failed := map[string]bool{}
	for _, s := range rec2.Ended() {
		if s.Status().Code.String() == "Error" {
			failed[s.Name()] = true
		}
	}
	if !failed["render"] || !failed["render.print"] {
		t.Errorf("failed spans %v, want render and render.print", failed)
	}
}
