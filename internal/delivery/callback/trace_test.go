package callback

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// TestDeliver_ContinuesTheExportsTrace: with tracing on, the delivery is a
// pdf:callback span in the trace its task names, the POST an HTTP client
// span under it, and the receiver gets a traceparent of that trace; a
// receiver's failure marks the spans.
func TestDeliver_ContinuesTheExportsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	t.Cleanup(tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
	var got []string
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	d := deliverer(Config{Allowed: allowlist.MustParse(strings.TrimPrefix(srv.URL, "http://"))})
	defer d.Close()

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	body, _ := json.Marshal(spec.Final{TaskID: "t-1", State: spec.StateCompleted})
	payload, _ := json.Marshal(tasks.Callback{URL: srv.URL + "/hook", Delivery: "callback-t-1", Body: body,
		Traceparent: "00-" + traceID + "-00f067aa0ba902b7-01"})
	tk := asynq.NewTask(tasks.TypeCallback, payload)
	if err := d.ProcessTask(context.Background(), tk); err == nil {
		t.Fatal("a 503 was delivered")
	}
	status = http.StatusOK
	if err := d.ProcessTask(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.HasPrefix(got[1], "00-"+traceID+"-") {
		t.Fatalf("receiver's traceparent headers %q", got)
	}
	var deliveries, posts int
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() != traceID {
			t.Errorf("span %s in trace %s", s.Name(), s.SpanContext().TraceID())
		}
		switch s.Name() {
		case tasks.TypeCallback:
			if deliveries++; deliveries == 1 && s.Status().Code.String() != "Error" {
				t.Errorf("failed delivery's span status %v", s.Status())
			}
		case "callback POST":
			posts++
		}
	}
	if deliveries != 2 || posts != 2 {
		t.Errorf("%d delivery spans, %d POST spans; want 2 and 2", deliveries, posts)
	}
}
