package export

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
)

// BenchmarkProcessTaskTraced is BenchmarkProcessTask with tracing on: every
// span sampled and handed to an exporter that drops it (what a process
// pays besides the export over the network).
func BenchmarkProcessTaskTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	b.Cleanup(tracing.Install(tp))
	benchmarkProcessTask(b)
}
