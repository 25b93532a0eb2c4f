package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pdfexport/pdfexport/internal/platform/tracing/tracingtest"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestExport_TraceContext: `enqueue export` run with TRACEPARENT (a traced
// script or CI job) writes that trace into the payload, tracing off; with
// OTEL_EXPORTER_OTLP_ENDPOINT set it exports its enqueue span, in that
// trace, as pdfexport-enqueue, before it exits.
func TestExport_TraceContext(t *testing.T) {
	for _, v := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME"} {
		t.Setenv(v, "")
	}
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) }) // the CLI installs its own
	srv := testsupport.StartRedis(t)
	htmlFile := filepath.Join(t.TempDir(), "m.html")
	if err := os.WriteFile(htmlFile, []byte("<!doctype html><h1>Manual</h1>"), 0o644); err != nil {
		t.Fatal(err)
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	env := []string{"REDIS_URL=" + srv.URL(), "TRACEPARENT=00-" + traceID + "-00f067aa0ba902b7-01"}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	payload := func(stdout string) spec.Envelope {
		t.Helper()
		var job struct {
			TaskID string `json:"task_id"`
			Queue  string `json:"queue"`
		}
		if err := json.Unmarshal([]byte(stdout), &job); err != nil {
			t.Fatalf("stdout %q: %v", stdout, err)
		}
		info, err := insp.GetTaskInfo(job.Queue, job.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		p, err := spec.DecodeEnvelope(info.Payload)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	r := runCLI(t, env, "export", "--manual", "m", "--version", "1", "--html-file", htmlFile, "--json")
	if r.code != exitOK {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	if p := payload(r.stdout); p.Traceparent != "00-"+traceID+"-00f067aa0ba902b7-01" {
		t.Errorf("tracing off: payload traceparent %q, want TRACEPARENT's", p.Traceparent)
	}

	c := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.HTTPURL)
	r = runCLI(t, env, "export", "--manual", "m", "--version", "2", "--html-file", htmlFile, "--json")
	if r.code != exitOK {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	p := payload(r.stdout)
	spans := c.Wait(t, 5*time.Second, func(s []tracingtest.Span) bool { return len(tracingtest.Find(s, "pdf:export enqueue")) == 1 })
	enq := tracingtest.Find(spans, "pdf:export enqueue")[0]
	if enq.TraceID != traceID || enq.ParentSpanID != "00f067aa0ba902b7" || enq.Service != "pdfexport-enqueue" {
		t.Errorf("enqueue span %+v", enq)
	}
	if !strings.HasPrefix(p.Traceparent, "00-"+traceID+"-"+enq.SpanID) {
		t.Errorf("tracing on: payload traceparent %q, want the enqueue span %s", p.Traceparent, enq.SpanID)
	}
}
