package storage

import (
	"bytes"
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestS3_SpansWithTracingOn: with tracing enabled, the AWS SDK's own
// instrumentation makes a client span per S3 operation under the caller's
// span; with it off, the client gets no tracer (nothing recorded).
func TestS3_SpansWithTracingOn(t *testing.T) {
	srv := testsupport.StartS3(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore := tracing.Install(tp)
	t.Cleanup(restore)
	h := newS3Harness(t, srv, "traced/", S3Config{})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "upload")
	if _, err := h.Create(ctx, "m/1/a.pdf", bytes.NewReader([]byte("%PDF-1.4 x")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	var names []string
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), "S3.") {
			names = append(names, s.Name())
			if s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
				t.Errorf("%s in another trace", s.Name())
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no S3 spans; spans: %v", rec.Ended())
	}
	t.Logf("S3 spans: %v", names)

	restore()
	n := len(rec.Ended())
	off := newS3Harness(t, srv, "untraced/", S3Config{})
	if _, err := off.Create(context.Background(), "m/1/b.pdf", bytes.NewReader([]byte("%PDF-1.4 y")), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(rec.Ended()) != n {
		t.Errorf("spans recorded with tracing off")
	}
}
