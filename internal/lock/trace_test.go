package lock

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func recordSpans(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(tracing.Install(tp))
	return tp, rec
}

func eventNames(s sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, e := range s.Events() {
		names = append(names, e.Name)
	}
	return names
}

// TestGate_Spans: the holder's gate span says acquired; a waiter's says
// contended then released, links to the holder's span (its token names it)
// and names it in attributes; the release is a span of its own.
func TestGate_Spans(t *testing.T) {
	tp, rec := recordSpans(t)
	srv := testsupport.StartRedis(t)
	g := NewGate(newTestMutex(t, srv.Client(), Config{TTL: 5 * time.Second, PollInterval: time.Second}))

	hctx, holder := tp.Tracer("test").Start(context.Background(), "holder export")
	e, err := g.Enter(hctx, "k", "")
	if err != nil || e.Result != Acquired {
		t.Fatalf("holder: %+v, %v", e, err)
	}
	done := make(chan Entry, 1)
	go func() {
		wctx, waiter := tp.Tracer("test").Start(context.Background(), "waiter export")
		defer waiter.End()
		we, err := g.Enter(wctx, "k", "")
		if err != nil {
			t.Error(err)
		}
		done <- we
	}()
	time.Sleep(200 * time.Millisecond) // the waiter is waiting
	if err := e.Lease.Release(hctx, Outcome{Status: StatusStored, ETag: "e1"}); err != nil {
		t.Fatal(err)
	}
	holder.End()
	if we := <-done; we.Result != Released {
		t.Fatalf("waiter: %+v", we)
	}

	var gates, releases []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "render gate":
			gates = append(gates, s)
		case "render lock release":
			releases = append(releases, s)
		}
	}
	if len(gates) != 2 || len(releases) != 1 {
		t.Fatalf("%d gate spans, %d release spans", len(gates), len(releases))
	}
	hsc := holder.SpanContext()
	for _, s := range gates {
		events := eventNames(s)
		if s.Parent().TraceID() == hsc.TraceID() { // the holder's
			if !slices.Equal(events, []string{"acquired"}) || s.Parent().SpanID() != hsc.SpanID() {
				t.Errorf("holder's gate span: events %v, parent %v", events, s.Parent())
			}
			continue
		}
		if !slices.Equal(events, []string{"contended", "released by the holder"}) {
			t.Errorf("waiter's gate span events %v", events)
		}
		if l := s.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != hsc.SpanID() || l[0].SpanContext.TraceID() != hsc.TraceID() {
			t.Errorf("waiter's links %+v, want the holder's span %s", l, hsc.SpanID())
		}
	}
	if releases[0].Parent().SpanID() != hsc.SpanID() {
		t.Errorf("release span's parent %v", releases[0].Parent())
	}
}

// TestGate_FailOpenIsAnEvent: a gate that fails open says so on its span.
func TestGate_FailOpenIsAnEvent(t *testing.T) {
	tp, rec := recordSpans(t)
	srv := testsupport.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 500 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	srv.Stop()
	t.Cleanup(srv.Start)
	g := NewGate(newTestMutex(t, rdb, Config{FailOpen: true, OpTimeout: time.Second}))
	ctx, span := tp.Tracer("test").Start(context.Background(), "export")
	if e, err := g.Enter(ctx, "k", ""); err != nil || e.Result != FailOpen {
		t.Fatalf("Enter = %+v, %v", e, err)
	}
	span.End()
	for _, s := range rec.Ended() {
		if s.Name() == "render gate" {
			if !slices.Contains(eventNames(s), "fail_open") {
				t.Errorf("gate span events %v", eventNames(s))
			}
			return
		}
	}
	t.Fatal("no gate span")
}

func TestHolderSpan(t *testing.T) {
	if _, ok := holderSpan(newToken()); ok {
		t.Error("a plain token names a span")
	}
	if _, ok := holderSpan("abc.zz-yy"); ok {
		t.Error("garbage names a span")
	}
	if token := holderToken(context.Background()); len(token) != 32 {
		t.Errorf("token without a span: %q", token)
	}
}
