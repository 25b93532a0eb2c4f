package callback

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pdfexport/pdfexport/internal/delivery/callback"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

const secret = "whsec_dGVzdC1zZWNyZXQtMDEyMzQ1Njc4OWFi"

// sender is a real Deliverer allowed to reach srv, signing with secret
// unless keys says otherwise.
func sender(t *testing.T, srv *httptest.Server, keys [][]byte) *callback.Deliverer {
	t.Helper()
	if keys == nil {
		var err error
		if keys, err = spec.ParseCallbackSecrets(secret); err != nil {
			t.Fatal(err)
		}
	}
	d := callback.New(callback.Config{Keys: keys, Allowed: allowlist.MustParse(strings.TrimPrefix(srv.URL, "http://")),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(d.Close)
	return d
}

func callbackTask(t *testing.T, url, traceparent string) *asynq.Task {
	t.Helper()
	body, _ := json.Marshal(spec.Final{TaskID: "t-1", State: spec.StateCompleted})
	tk, err := tasks.NewCallbackTask(tasks.Callback{URL: url, Delivery: "callback-t-1", Body: body, Traceparent: traceparent})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestProcessTask_RetriesOrEnds: a receiver's failure is retried by the
// queue; a refusal (no secret) and a malformed task end the task; a 2xx
// is delivered.
func TestProcessTask_RetriesOrEnds(t *testing.T) {
	status := http.StatusServiceUnavailable
	var posts int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts++
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	h := New(sender(t, srv, nil))
	tk := callbackTask(t, srv.URL+"/hook", "")
	if err := h.ProcessTask(context.Background(), tk); err == nil || errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("a 503: %v, want a retryable error", err)
	}
	status = http.StatusNoContent
	if err := h.ProcessTask(context.Background(), tk); err != nil {
		t.Fatalf("a 204: %v", err)
	}
	for name, c := range map[string]struct {
		h  *Handler
		tk *asynq.Task
	}{
		"no secret":    {New(sender(t, srv, [][]byte{})), tk},
		"malformed":    {h, asynq.NewTask(tasks.TypeCallback, []byte("{"))},
		"host refused": {h, callbackTask(t, "http://elsewhere.invalid/hook", "")},
	} {
		err := c.h.ProcessTask(context.Background(), c.tk)
		if !errors.Is(err, callback.ErrRefused) || !errors.Is(err, asynq.SkipRetry) {
			t.Errorf("%s: %v, want a final refusal", name, err)
		}
	}
	if posts != 2 {
		t.Errorf("the receiver got %d POSTs, want the 2 allowed", posts)
	}
}

// TestProcessTask_ContinuesTheExportsTrace: with tracing on, the delivery
// is a pdf:callback span in the trace its task names, the POST an HTTP
// client span under it, and the receiver gets a traceparent of that
// trace; a receiver's failure marks the spans.
func TestProcessTask_ContinuesTheExportsTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	t.Cleanup(tracing.Install(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
	var got []string
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	h := New(sender(t, srv, nil))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	tk := callbackTask(t, srv.URL+"/hook", "00-"+traceID+"-00f067aa0ba902b7-01")
	if err := h.ProcessTask(context.Background(), tk); err == nil {
		t.Fatal("a 503 was delivered")
	}
	status = http.StatusOK
	if err := h.ProcessTask(context.Background(), tk); err != nil {
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
