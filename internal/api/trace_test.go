package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api/apitest"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerParent  = "00-" + callerTraceID + "-00f067aa0ba902b7-01"
	validPayload  = `{"v":1,"manual_id":"ops-guide","version":"2026.11.3","source":{"url":"https://docs.example.com/print"}}`
)

// enqueueWithHeader POSTs a payload with a traceparent header and returns
// the payload of the task it enqueued.
func enqueueWithHeader(t *testing.T, srv *httptest.Server, insp *asynq.Inspector, traceparent, body string) spec.Envelope {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/exports", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
		req.Header.Set("tracestate", "congo=t61rcWkgMzE")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	id := strings.TrimPrefix(resp.Header.Get("Location"), "/v1/exports/")
	info, err := insp.GetTaskInfo("default", id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := spec.DecodeEnvelope(info.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func apiFor(t *testing.T, redisAddr string) (*httptest.Server, *asynq.Inspector) {
	t.Helper()
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redisAddr}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(apitest.Contract(t, New(Config{Client: c, Logger: slog.New(slog.DiscardHandler)})))
	t.Cleanup(srv.Close)
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: redisAddr})
	t.Cleanup(func() { _ = insp.Close() })
	return srv, insp
}

// TestAPI_ContinuesTheCallersTrace_TracingOff: without tracing in the API,
// an incoming traceparent header still reaches the task payload unchanged
// (the workers' spans join the caller's trace); a malformed header is
// ignored; a request without one enqueues no trace context.
func TestAPI_ContinuesTheCallersTrace_TracingOff(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv, insp := apiFor(t, redis.Addr())
	if p := enqueueWithHeader(t, srv, insp, callerParent, validPayload); p.Traceparent != callerParent || p.Tracestate != "congo=t61rcWkgMzE" {
		t.Errorf("payload traceparent %q tracestate %q, want the header's", p.Traceparent, p.Tracestate)
	}
	if p := enqueueWithHeader(t, srv, insp, "00-garbage", validPayload); p.Traceparent != "" {
		t.Errorf("malformed header gave %q", p.Traceparent)
	}
	if p := enqueueWithHeader(t, srv, insp, "", validPayload); p.Traceparent != "" {
		t.Errorf("no header gave %q", p.Traceparent)
	}
	// The trace context is the envelope's: a body that names it, well
	// formed or not, is a 400 naming the field.
	code, body := do(t, "POST", srv.URL+"/v1/exports", "", `{"v":1,"manual_id":"m","version":"1","source":{"html":"x"},"traceparent":"`+callerParent+`"}`)
	if code != http.StatusBadRequest || body["field"] != "traceparent" {
		t.Errorf("traceparent field in the body: %d %v", code, body)
	}
}

// TestAPI_ContinuesTheCallersTrace_TracingOn: with tracing on, the request
// is a server span under the caller's, the enqueue a producer span under
// it, and the payload names the enqueue span in the caller's trace.
func TestAPI_ContinuesTheCallersTrace_TracingOn(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	t.Cleanup(tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
	redis := testsupport.StartRedis(t)
	srv, insp := apiFor(t, redis.Addr())
	p := enqueueWithHeader(t, srv, insp, callerParent, validPayload)

	var server, producer sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.SpanKind() {
		case trace.SpanKindServer:
			server = s
		case trace.SpanKindProducer:
			producer = s
		}
	}
	if server == nil || producer == nil {
		t.Fatalf("spans %v", rec.Ended())
	}
	if server.Name() != "POST /v1/exports" || server.Parent().SpanID().String() != "00f067aa0ba902b7" || server.SpanContext().TraceID().String() != callerTraceID {
		t.Errorf("server span %q parent %v", server.Name(), server.Parent())
	}
	if producer.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Errorf("producer span's parent %v, want the server span", producer.Parent())
	}
	want := "00-" + callerTraceID + "-" + producer.SpanContext().SpanID().String() + "-01"
	if p.Traceparent != want || p.Tracestate != "congo=t61rcWkgMzE" {
		t.Errorf("payload traceparent %q tracestate %q, want %q", p.Traceparent, p.Tracestate, want)
	}
}
