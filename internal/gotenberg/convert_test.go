package gotenberg

import (
	"bytes"
	"context"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestConvertTimesOutWith503: with no worker serving the queue, a
// conversion waits Config.Wait, answers 503 as Gotenberg does on its API
// timeout, and its export is canceled (nobody will read its PDF); the
// trace is echoed and is the export's request id.
func TestConvertTimesOutWith503(t *testing.T) {
	testsupport.SkipShort(t, "starts Redis")
	redis := testsupport.StartRedis(t)
	client, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	store, err := storage.Open(context.Background(), storage.Config{URL: "file://" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var logs harness.SyncBuffer
	h := New(Config{Queue: client, Store: store, Wait: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, _ := mw.CreateFormFile("files", "index.html")
	_, _ = w.Write([]byte("<p>never rendered</p>"))
	_ = mw.Close()
	req := httptest.NewRequest(http.MethodPost, "/forms/chromium/convert/html", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Gotenberg-Trace", "trace-503")
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != "Service Unavailable" {
		t.Fatalf("%d %q, want 503 Service Unavailable", rec.Code, rec.Body.String())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("answered after %s, want about the 500 ms wait", took)
	}
	if rec.Header().Get("Gotenberg-Trace") != "trace-503" {
		t.Errorf("Gotenberg-Trace %q", rec.Header().Get("Gotenberg-Trace"))
	}
	out := logs.String()
	if !strings.Contains(out, "not done in time; canceled") || !strings.Contains(out, "cancel_err=<nil>") {
		t.Errorf("the export was not canceled:\n%s", out)
	}
	id := out[strings.Index(out, "task_id=")+len("task_id="):]
	id = id[:strings.IndexAny(id, " \n")]
	st, err := client.Status(context.Background(), id)
	if err != nil || st.State != exportclient.StateCanceled {
		t.Errorf("task %s: %+v %v, want canceled", id, st, err)
	}
}
