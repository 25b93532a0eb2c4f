package gotenberg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/delivery/callback"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// flakyHooks refuses the first delivery, then takes them as fakeHooks.
type flakyHooks struct {
	fakeHooks
	calls atomic.Int32
}

func (f *flakyHooks) Send(ctx context.Context, u callback.Upload) error {
	if f.calls.Add(1) == 1 {
		return errors.New("receiver answered 503")
	}
	return f.fakeHooks.Send(ctx, u)
}

// TestDurableEngineWebhook: with HookTasks and Spool, an engine route's
// output is stored and its delivery queued in Redis before the 204; the
// queue's server (NewHooks) delivers it, retrying a refused attempt, and
// a failure known at once is queued and delivered to the error URL.
func TestDurableEngineWebhook(t *testing.T) {
	testsupport.SkipShort(t, "starts Redis")
	redis := testsupport.StartRedis(t)
	opt := asynq.RedisClientOpt{Addr: redis.Addr()}
	store, err := storage.Open(context.Background(), storage.Config{URL: "file://" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tasks := asynq.NewClient(opt)
	t.Cleanup(func() { _ = tasks.Close() })
	hooks := &flakyHooks{fakeHooks: fakeHooks{got: make(chan sent, 8)}}
	cfg := Config{Store: store, Spool: store, HookTasks: tasks, Webhooks: hooks, Logger: slog.New(slog.DiscardHandler)}
	h := New(cfg)
	post := func(data []byte, header map[string]string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, mergeRequest(t, "a.pdf", data, header))
		if rec.Code != http.StatusNoContent {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	hdr := map[string]string{webhookURLHeader: "http://hooks/result", webhookErrorURLHeader: "http://hooks/error", "Gotenberg-Trace": "durable"}
	post(testsupport.TextPDF("Hook page"), hdr)
	post([]byte("not a PDF"), hdr)
	insp := asynq.NewInspector(opt)
	t.Cleanup(func() { _ = insp.Close() })
	if q, err := insp.GetQueueInfo(WebhookQueue); err != nil || q.Pending != 2 {
		t.Fatalf("queue %+v %v, want 2 deliveries pending before any server runs", q, err)
	}

	srv := asynq.NewServer(opt, asynq.Config{Queues: map[string]int{WebhookQueue: 1}, Concurrency: 1,
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return 100 * time.Millisecond }, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.Handle(TypeWebhook, NewHooks(cfg))
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	var result, failure bool
	for range 2 {
		s := hooks.next(t)
		switch s.url {
		case "http://hooks/result":
			result = bytes.HasPrefix(s.body, []byte("%PDF-")) && s.header.Get("Gotenberg-Trace") == "durable"
		case "http://hooks/error":
			var e struct{ Status int }
			failure = json.Unmarshal(s.body, &e) == nil && e.Status == 400
		}
	}
	if !result || !failure {
		t.Errorf("result delivered %v, failure delivered %v", result, failure)
	}
	if n := hooks.calls.Load(); n != 3 {
		t.Errorf("%d sends, want 3 (one refused and retried)", n)
	}
}
