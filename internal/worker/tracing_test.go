package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/logging"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/platform/tracing/tracingtest"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestWorker_OneTraceFromEnqueueToCallback: tracing configured only by the
// OTEL_* variables, exporting over OTLP/HTTP to an in-process collector. An
// export enqueued under a caller's span is one trace: the caller's span →
// the enqueue (producer) → pdf:export on the worker (consumer) → the render
// gate, the render and each of its stages, the storage upload, the lock
// release (and the lock Redis commands) → the pdf:callback delivery and its
// POST, whose receiver gets the trace in its traceparent header. The
// worker's log lines of the export carry the trace id. An export that fails
// for good has its spans marked as errors.
func TestWorker_OneTraceFromEnqueueToCallback(t *testing.T) {
	// Serial (no t.Parallel): it sets the OTEL variables (t.Setenv) and the global tracer provider.
	for _, v := range append(tracing.Variables, "OTEL_BSP_SCHEDULE_DELAY") {
		t.Setenv(v, "")
	}
	collector := tracingtest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.HTTPURL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	shutdownTracing, err := tracing.Setup(context.Background(), tracing.ServiceWorker)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tracing.Shutdown(shutdownTracing, 5*time.Second, nil)
		otel.SetTracerProvider(noop.NewTracerProvider())
	})
	if !tracing.Enabled() {
		t.Fatal("tracing not enabled by OTEL_EXPORTER_OTLP_ENDPOINT")
	}

	redis := testsupport.StartRedis(t)
	site := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(site.Close)
	var hookMu sync.Mutex
	var hookHeaders []string
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		hookHeaders = append(hookHeaders, r.Header.Get("traceparent"))
		hookMu.Unlock()
	}))
	t.Cleanup(hooks.Close)
	siteHost, hookHost := strings.TrimPrefix(site.URL, "http://"), strings.TrimPrefix(hooks.URL, "http://")
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+siteHost,
		"CALLBACK_ALLOWED_HOSTS="+hookHost, "CALLBACK_SECRET="+callbackSecret)
	var logs harness.SyncBuffer
	w := New(cfg, Options{Logger: logging.New(&logs, "info", "json")})
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Start(sctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)

	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: siteHost, CallbackAllowedHosts: hookHost})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The caller: an API server handling a request.
	rctx, request := otel.Tracer("test").Start(ctx, "handle request")
	job, err := c.Enqueue(rctx, exportclient.Request{ManualID: "ops-guide", Version: "1",
		HTML:        `<!doctype html><h1>Traced</h1><script>setTimeout(() => window.ready = true, 50)</script>`,
		Options:     exportclient.Options{WaitFor: "window.ready === true"},
		CallbackURL: hooks.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	request.End()
	st, err := c.Wait(ctx, job.TaskID, 0)
	if err != nil || st.State != exportclient.StateCompleted || !st.Result.Rendered {
		t.Fatalf("export: %+v, %v", st, err)
	}
	// One that fails for good: its page answers 404.
	failed, err := c.Enqueue(ctx, exportclient.Request{ManualID: "ops-guide", Version: "2", URL: site.URL + "/missing"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := c.Wait(ctx, failed.TaskID, 0); err != nil || st.State != exportclient.StateFailed {
		t.Fatalf("failing export: %+v, %v", st, err)
	}
	traceID := request.SpanContext().TraceID().String()
	collector.Wait(t, 30*time.Second, func(s []tracingtest.Span) bool {
		return len(tracingtest.Find(s, "callback POST")) > 0 && len(tracingtest.Find(s, "pdf:export")) >= 2
	})
	w.Shutdown()
	tracing.Shutdown(shutdownTracing, 5*time.Second, func(err error) { t.Errorf("flushing: %v", err) })
	spans := collector.Spans()
	tree := tracingtest.Tree(spans)

	one := func(name string, pick func(tracingtest.Span) bool) tracingtest.Span {
		t.Helper()
		var found []tracingtest.Span
		for _, s := range tracingtest.Find(spans, name) {
			if pick == nil || pick(s) {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d spans %q, want 1; spans:\n%s", len(found), name, tree)
		}
		return found[0]
	}
	inTrace := func(s tracingtest.Span) bool { return s.TraceID == traceID }

	enqueue := one("pdf:export enqueue", inTrace)
	if enqueue.ParentSpanID != request.SpanContext().SpanID().String() || enqueue.Kind != tracepb.Span_SPAN_KIND_PRODUCER {
		t.Errorf("enqueue span: parent %s kind %v", enqueue.ParentSpanID, enqueue.Kind)
	}
	export := one("pdf:export", inTrace)
	if export.ParentSpanID != enqueue.SpanID || export.Kind != tracepb.Span_SPAN_KIND_CONSUMER || export.Service != tracing.ServiceWorker {
		t.Errorf("export span: parent %s (want %s) kind %v service %s", export.ParentSpanID, enqueue.SpanID, export.Kind, export.Service)
	}
	for k, want := range map[string]string{"pdfexport.task_id": job.TaskID, "pdfexport.manual_id": "ops-guide", "pdfexport.version": "1",
		"pdfexport.artifact_key": job.ArtifactKey, "pdfexport.outcome": "rendered", "messaging.destination.name": "default"} {
		if export.Attributes[k] != want {
			t.Errorf("export span %s = %q, want %q", k, export.Attributes[k], want)
		}
	}
	if export.Error {
		t.Errorf("export span is an error: %s", export.StatusMsg)
	}
	// Under it: the gate, the render and its stages, the upload, the release.
	for _, name := range []string{"render gate", "render", "render.tab", "render.load", "render.network_idle", "render.fonts",
		"render.wait_for", "render.print", "render.stream", "storage upload", "render lock release"} {
		found := false
		for _, s := range tracingtest.Find(spans, name) {
			if s.TraceID == traceID && tracingtest.Descends(spans, s, export) {
				found = true
				if s.Error {
					t.Errorf("%s is an error: %s", name, s.StatusMsg)
				}
			}
		}
		if !found {
			t.Errorf("no %q span under pdf:export", name)
		}
	}
	gate := one("render gate", inTrace)
	if gate.ParentSpanID != export.SpanID || !slices.Contains(gate.Events, "acquired") {
		t.Errorf("gate span: parent %s, events %v", gate.ParentSpanID, gate.Events)
	}
	// redisotel on the lock client: the gate's script is a client span under it.
	redisUnderGate := false
	for _, s := range spans {
		if s.ParentSpanID == gate.SpanID && s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			redisUnderGate = true
		}
	}
	if !redisUnderGate {
		t.Error("no Redis client span under the render gate")
	}
	upload := one("storage upload", inTrace)
	if stream := one("render.stream", inTrace); upload.ParentSpanID != stream.SpanID {
		t.Errorf("storage upload's parent %s, want render.stream %s", upload.ParentSpanID, stream.SpanID)
	}
	if release := one("render lock release", inTrace); release.ParentSpanID != export.SpanID {
		t.Errorf("release's parent %s, want pdf:export", release.ParentSpanID)
	}

	// The callback: same trace, its POST under it, the header at the receiver.
	delivery := one("pdf:callback", inTrace)
	post := one("callback POST", inTrace)
	if post.ParentSpanID != delivery.SpanID || !tracingtest.Descends(spans, delivery, export) {
		t.Errorf("callback spans: POST parent %s, delivery %s; delivery under the export: %v",
			post.ParentSpanID, delivery.SpanID, tracingtest.Descends(spans, delivery, export))
	}
	hookMu.Lock()
	if len(hookHeaders) != 1 || !strings.HasPrefix(hookHeaders[0], "00-"+traceID+"-") {
		t.Errorf("receiver's traceparent headers %q", hookHeaders)
	}
	hookMu.Unlock()

	// The failed export: its own trace (no caller span), marked failed.
	bad := one("pdf:export", func(s tracingtest.Span) bool { return s.Attributes["pdfexport.task_id"] == failed.TaskID })
	if !bad.Error || bad.Attributes["pdfexport.outcome"] != "failed" || bad.TraceID == traceID {
		t.Errorf("failed export span: error %v outcome %q trace %s", bad.Error, bad.Attributes["pdfexport.outcome"], bad.TraceID)
	}
	if r := one("render", func(s tracingtest.Span) bool { return s.TraceID == bad.TraceID }); !r.Error {
		t.Error("the failed render's span is not an error")
	}

	// The worker's log lines of the export carry its trace.
	var done map[string]any
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, `"msg":"export done"`) && strings.Contains(line, job.TaskID) {
			if err := json.Unmarshal([]byte(line), &done); err != nil {
				t.Fatal(err)
			}
		}
	}
	if done["trace_id"] != traceID || done["span_id"] != export.SpanID {
		t.Errorf(`"export done" log line %v, want trace_id %s span_id %s`, done, traceID, export.SpanID)
	}
	if t.Failed() {
		t.Logf("spans:\n%s", tree)
	}
}
