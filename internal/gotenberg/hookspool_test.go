package gotenberg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/delivery/callback"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// spoolIn lists the spool's folders under the file store at dir, beside
// the objects and beside their sidecars.
func spoolIn(dir string) []string {
	var out []string
	for _, sub := range []string{spoolPrefix, ".meta/" + spoolPrefix} {
		entries, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(sub)))
		for _, e := range entries {
			out = append(out, sub+e.Name())
		}
	}
	return out
}

func fileStore(t *testing.T) (storage.Backend, string) {
	t.Helper()
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), storage.Config{URL: "file://" + dir})
	if err != nil {
		t.Fatal(err)
	}
	return store, dir
}

// spoolHooks refuses every delivery to a URL with "refuse" in it, noting
// the spool's folders at that moment, and takes the others as fakeHooks.
type spoolHooks struct {
	fakeHooks
	spool   func() []string
	mu      sync.Mutex
	refused [][]string
}

func (s *spoolHooks) Send(ctx context.Context, u callback.Upload) error {
	if !strings.Contains(u.URL, "refuse") {
		return s.fakeHooks.Send(ctx, u)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, s.spool())
	return errors.New("receiver answered 503")
}

// takeRefused returns the spool's folders at each refusal since the last
// call.
func (s *spoolHooks) takeRefused() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.refused
	s.refused = nil
	return r
}

// TestDurableWebhookDropsItsSpool: an engine route's spooled output is
// kept while its delivery is retried and deleted once the task is final:
// delivered, its failure delivered to the error URL after the last
// attempt, or the last attempt refused by both URLs.
func TestDurableWebhookDropsItsSpool(t *testing.T) {
	testsupport.SkipShort(t, "starts Redis")
	redis := testsupport.StartRedis(t)
	opt := asynq.RedisClientOpt{Addr: redis.Addr()}
	store, dir := fileStore(t)
	tasks := asynq.NewClient(opt)
	t.Cleanup(func() { _ = tasks.Close() })
	hooks := &spoolHooks{fakeHooks: fakeHooks{got: make(chan sent, 8)}, spool: func() []string { return spoolIn(dir) }}
	cfg := Config{Store: store, Spool: store, HookTasks: tasks, Webhooks: hooks, Logger: slog.New(slog.DiscardHandler)}
	srv := asynq.NewServer(opt, asynq.Config{Queues: map[string]int{WebhookQueue: 1}, Concurrency: 1, DelayedTaskCheckInterval: 20 * time.Millisecond,
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return 10 * time.Millisecond }, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.Handle(TypeWebhook, NewHooks(cfg))
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	h := New(cfg)
	attempts := hookMaxRetry + 1
	for _, c := range []struct {
		name, url, errorURL string
		delivered           string // the URL that takes a delivery, "" none
		refusals            int
	}{
		{"delivered", "http://hooks/result", "http://hooks/error", "http://hooks/result", 0},
		{"failure delivered after the last attempt", "http://hooks/refuse", "http://hooks/error", "http://hooks/error", attempts},
		{"last attempt refused by both URLs", "http://hooks/refuse", "http://hooks/refuse-error", "", attempts + 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, mergeRequest(t, "a.pdf", testsupport.TextPDF("Spooled page"), map[string]string{webhookURLHeader: c.url, webhookErrorURLHeader: c.errorURL}))
			if rec.Code != http.StatusNoContent {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if c.delivered != "" {
				if s := hooks.next(t); s.url != c.delivered {
					t.Errorf("delivered to %s, want %s", s.url, c.delivered)
				}
			}
			waitSpoolEmpty(t, dir)
			refused := hooks.takeRefused()
			if len(refused) != c.refusals {
				t.Errorf("%d refusals, want %d", len(refused), c.refusals)
			}
			for i, folders := range refused {
				if len(folders) != 2 {
					t.Errorf("refusal %d: the spool held %v, want the task's folder and its sidecars' until the task is final", i+1, folders)
				}
			}
			hooks.none(t)
		})
	}
}

func waitSpoolEmpty(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(spoolIn(dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the spool still holds %v", spoolIn(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hookTasksFunc enqueues as its func says.
type hookTasksFunc func() error

func (f hookTasksFunc) EnqueueContext(context.Context, *asynq.Task, ...asynq.Option) (*asynq.TaskInfo, error) {
	if err := f(); err != nil {
		return nil, err
	}
	return &asynq.TaskInfo{}, nil
}

// downQueue refuses every export, as exportclient with Redis down.
type downQueue struct{ *shotQueue }

func (downQueue) EnqueuePayload(context.Context, exportclient.Payload, ...exportclient.EnqueueOption) (exportclient.Enqueued, error) {
	return exportclient.Enqueued{}, errors.New("redis: connection refused")
}

// stampedConversion is an HTML conversion stamped from a PDF file (its
// step file spooled), with the webhook headers.
func stampedConversion(t *testing.T) *http.Request {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, _ := mw.CreateFormFile("files", "index.html")
	_, _ = w.Write([]byte("<p>stamped</p>"))
	_ = mw.WriteField("stampSource", "pdf")
	w, _ = mw.CreateFormFile("stamp", "stamp.pdf")
	_, _ = w.Write(testsupport.TextPDF("MARK"))
	_ = mw.Close()
	req := httptest.NewRequest(http.MethodPost, "/forms/chromium/convert/html", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set(webhookURLHeader, "http://hooks/result")
	req.Header.Set(webhookErrorURLHeader, "http://hooks/error")
	return req
}

// TestDurableWebhookUnqueuedLeavesNoSpool: when the export or the
// delivery task cannot be enqueued, the caller gets the 503 and what was
// spooled for the request is deleted first (no task would ever read
// it); queued, it stays for the delivery.
func TestDurableWebhookUnqueuedLeavesNoSpool(t *testing.T) {
	down := func() error { return errors.New("redis: connection refused") }
	up := func() error { return nil }
	pdf := testsupport.TextPDF("Spooled page")
	for _, c := range []struct {
		name      string
		tasks     hookTasksFunc
		exportsUp bool
		req       func(t *testing.T) *http.Request
		code      int
		folders   int
	}{
		{"engine route, delivery not queued", down, true, func(t *testing.T) *http.Request {
			return mergeRequest(t, "a.pdf", pdf, map[string]string{webhookURLHeader: "http://hooks/result", webhookErrorURLHeader: "http://hooks/error"})
		}, http.StatusServiceUnavailable, 0},
		{"conversion's steps, delivery not queued", down, true, stampedConversion, http.StatusServiceUnavailable, 0},
		{"conversion's steps, export not queued", up, false, stampedConversion, http.StatusServiceUnavailable, 0},
		{"conversion's steps, queued", up, true, stampedConversion, http.StatusNoContent, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			store, dir := fileStore(t)
			_, q := newShotHandler(t, nil)
			var queue Queue = q
			if !c.exportsUp {
				queue = downQueue{q}
			}
			h := New(Config{Queue: queue, Store: store, Spool: store, HookTasks: c.tasks, Webhooks: &fakeHooks{got: make(chan sent, 1)},
				Logger: slog.New(slog.DiscardHandler)})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, c.req(t))
			if rec.Code != c.code {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, c.code)
			}
			if got := spoolIn(dir); len(got) != c.folders {
				t.Errorf("the spool holds %v, want %d entries", got, c.folders)
			}
		})
	}
}

func TestSpoolFolderOfKeys(t *testing.T) {
	const id = "0b9d7f6e-3c1a-4f55-9e2b-7a8c5d4e3f21"
	for _, c := range []struct{ key, want string }{
		{spoolPrefix + id + "/out.pdf", spoolPrefix + id + "/"},
		{spoolPrefix + id + "/in/0/stamp.pdf", spoolPrefix + id + "/"},
		{"ops-guide/2026.11.3/0123456789abcdef.pdf", ""}, // a conversion's artifact
		{spoolPrefix + "not-an-id/out.pdf", ""},
		{spoolPrefix + id, ""},
		{spoolPrefix, ""},
		{"x/" + spoolPrefix + id + "/out.pdf", ""},
		{"", ""},
	} {
		if got := spoolFolder(c.key); got != c.want {
			t.Errorf("spoolFolder(%q) = %q, want %q", c.key, got, c.want)
		}
	}
	task := hookTask{Key: spoolPrefix + id + "/out.pdf", Steps: &hookSteps{Files: []spooledFile{{Key: spoolPrefix + id + "/in/0/a.pdf"}, {Key: "elsewhere/b.pdf"}}}}
	if got := task.spoolFolders(); len(got) != 1 || got[0] != spoolPrefix+id+"/" {
		t.Errorf("spoolFolders = %v, want the one folder", got)
	}
}

// brokenSpool stores nothing and cannot delete.
type brokenSpool struct{ Spool }

func (brokenSpool) DeletePrefix(context.Context, string) error {
	return errors.New("storage: access denied")
}

// TestSpoolDeleteFailureIsLoggedOnly: a delivery whose spool cannot be
// deleted is still done (no retry), and the failure is a warning naming
// the folder.
func TestSpoolDeleteFailureIsLoggedOnly(t *testing.T) {
	var logs bytes.Buffer
	hooks := &fakeHooks{got: make(chan sent, 2)}
	h := NewHooks(Config{Spool: brokenSpool{}, Webhooks: hooks, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	key := spoolPrefix + "0b9d7f6e-3c1a-4f55-9e2b-7a8c5d4e3f21/out.pdf"
	b, err := json.Marshal(hookTask{Hook: webhook{URL: "http://hooks/result", ErrorURL: "http://hooks/error"}, Key: key,
		Failure: &hookFailure{Status: http.StatusBadRequest, Message: "bad"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.ProcessTask(t.Context(), asynq.NewTask(TypeWebhook, b)); err != nil {
		t.Errorf("ProcessTask: %v, want the delivery done", err)
	}
	if s := hooks.next(t); s.url != "http://hooks/error" {
		t.Errorf("delivered to %s", s.url)
	}
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "deleting the webhook spool failed") ||
		!strings.Contains(out, "key="+strings.TrimSuffix(key, "out.pdf")) || !strings.Contains(out, "access denied") {
		t.Errorf("logs:\n%s", out)
	}
}
