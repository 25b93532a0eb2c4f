package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/tasks/export"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// onePagePDF is a minimal valid one-page PDF, printed once by Chromium.
func onePagePDF(t *testing.T) []byte {
	t.Helper()
	r, err := render.New(render.Config{ChromiumPath: testsupport.ChromiumPath(t), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var pdf bytes.Buffer
	if _, err := r.Render(context.Background(), render.Source{HTML: "<p>stub"}, spec.Options{}.Settings(),
		func(_ context.Context, rd io.Reader) error { _, err := io.Copy(&pdf, rd); return err }); err != nil {
		t.Fatal(err)
	}
	return pdf.Bytes()
}

type stubRenderer struct{ pdf []byte }

func (s stubRenderer) Render(ctx context.Context, _ render.Source, _ spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	return render.Stats{Pages: 1, Bytes: int64(len(s.pdf))}, sink(ctx, bytes.NewReader(s.pdf))
}

type countingGate struct {
	inner export.Gate
	n     *atomic.Int64
}

func (g countingGate) ForgetStored(ctx context.Context, id, etag string) (bool, error) {
	return g.inner.ForgetStored(ctx, id, etag)
}

func (g countingGate) Enter(ctx context.Context, id, stale string) (lock.Entry, error) {
	g.n.Add(1)
	return g.inner.Enter(ctx, id, stale)
}

func testConfig(t *testing.T, redisURL string) config.Config {
	t.Helper()
	cfg, err := config.Load([]string{"REDIS_URL=" + redisURL, "STORAGE_URL=file://" + t.TempDir(),
		"ADMIN_ADDR=127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestWorker_ExportsWithOverrides: a worker built from the configuration,
// with a stub renderer and instrumentation around the gate and the tasks,
// completes an export; its admin server answers; Shutdown stops it.
func TestWorker_ExportsWithOverrides(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	cfg := testConfig(t, redis.URL())
	var gates, tasksSeen atomic.Int64
	w := New(cfg, Options{
		Logger:   slog.New(slog.DiscardHandler),
		Renderer: stubRenderer{pdf: onePagePDF(t)},
		WrapGate: func(g export.Gate) export.Gate { return countingGate{inner: g, n: &gates} },
		Middleware: []asynq.MiddlewareFunc{func(next asynq.Handler) asynq.Handler {
			return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
				tasksSeen.Add(1)
				return next.ProcessTask(ctx, t)
			})
		}},
		Hostname: "test-worker",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	if w.Chromium() != nil {
		t.Error("Chromium() is not nil with a replaced renderer")
	}
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", HTML: "<p>x"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait(ctx, job.TaskID, 20*time.Millisecond)
	if err != nil || st.State != exportclient.StateCompleted || !st.Result.Rendered || st.Result.Pages != 1 {
		t.Fatalf("Wait = %+v (%+v), %v", st, st.Result, err)
	}
	if gates.Load() != 1 || tasksSeen.Load() != 1 {
		t.Errorf("gate entries %d, tasks seen by the middleware %d; want 1 and 1", gates.Load(), tasksSeen.Load())
	}
	out, err := exec.CommandContext(ctx, "curl", "-sf", "http://"+cfg.AdminAddr+"/readyz").CombinedOutput()
	if err != nil {
		t.Errorf("/readyz: %v %s", err, out)
	}
	w.Shutdown()
	w.Shutdown() // twice is fine
}

// TestWorker_StartWithoutStorageIsUnavailable: a worker whose storage
// cannot be opened fails to start with ErrUnavailable (cmd/worker's exit 3),
// and Shutdown after the failed start is safe.
func TestWorker_StartWithoutStorageIsUnavailable(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	cfg := testConfig(t, redis.URL())
	cfg.StorageURL = "file:///proc/pdfexport-cannot-create-this"
	w := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Renderer: stubRenderer{}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := w.Start(ctx)
	w.Shutdown()
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Start = %v, want ErrUnavailable", err)
	}
}

// TestWorker_PDFOverALimitFailsForGoodAndStoresNothing: with
// RENDER_MAX_PAGES=2, a 5-page export fails at once (no retry) with an error
// naming the limit, and the artifact folder holds no PDF.
func TestWorker_PDFOverALimitFailsForGoodAndStoresNothing(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	store := t.TempDir()
	cfg, err := config.Load([]string{"REDIS_URL=" + redis.URL(), "STORAGE_URL=file://" + store, "RENDER_MAX_PAGES=2",
		"CHROMIUM_PATH=" + testsupport.ChromiumPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.AdminAddr = ""
	startWorker(t, cfg, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	html := `<style>p{page-break-after:always}</style><p>1</p><p>2</p><p>3</p><p>4</p><p>5</p>`
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", HTML: html})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait(ctx, job.TaskID, 20*time.Millisecond)
	if err != nil || st.State != exportclient.StateFailed || st.Retried != 0 || !strings.Contains(st.Error, "RENDER_MAX_PAGES=2") {
		t.Fatalf("Wait = %+v, %v; want failed at once naming RENDER_MAX_PAGES=2", st, err)
	}
	var pdfs []string
	_ = filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".pdf") {
			pdfs = append(pdfs, p)
		}
		return nil
	})
	if len(pdfs) != 0 {
		t.Errorf("PDFs stored: %v", pdfs)
	}
}

// TestWorker_SweepsStaleTempFilesInTheBackground: a temp file a crash left
// in the file store's temp directory is removed after Start returns.
func TestWorker_SweepsStaleTempFilesInTheBackground(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	cfg := testConfig(t, redis.URL())
	dir := strings.TrimPrefix(cfg.StorageURL, "file://")
	if _, err := storage.NewFile(dir, ""); err != nil { // creates the temp directory
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".tmp", ".tmp-left-by-a-crash")
	if err := os.WriteFile(stale, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	startWorker(t, cfg, Options{Renderer: stubRenderer{}})
	testsupport.Eventually(t, 10*time.Second, func() error {
		_, err := os.Stat(stale)
		return testsupport.Unless(errors.Is(err, os.ErrNotExist), "the stale temp file is still there after Start (%v)", err)
	})
}

// TestWorker_ShutdownReleasesLeasesBeforeClosingRedis: a worker stopped past
// SHUTDOWN_TIMEOUT while it renders releases its lock (as failed) before it
// closes its Redis clients, so a worker waiting for the same artifact takes
// over at once instead of after LOCK_TTL.
func TestWorker_ShutdownReleasesLeasesBeforeClosingRedis(t *testing.T) {
	t.Parallel()
	var first atomic.Bool
	hang := make(chan struct{})
	rendering := make(chan struct{}, 1)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(false, true) { // the holder's render never gets its page
			rendering <- struct{}{}
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<p>page"))
	}))
	t.Cleanup(func() { close(hang); site.Close() })
	redis := testsupport.StartRedis(t)
	env := func() config.Config {
		cfg, err := config.Load([]string{"REDIS_URL=" + redis.URL(), "STORAGE_URL=file://" + t.TempDir(),
			"ALLOWED_HOSTS=" + strings.TrimPrefix(site.URL, "http://"), "SHUTDOWN_TIMEOUT=1s", "LOCK_TTL=30s",
			"CHROMIUM_PATH=" + testsupport.ChromiumPath(t)})
		if err != nil {
			t.Fatal(err)
		}
		cfg.AdminAddr = "" // two workers in one process
		return cfg
	}
	holderCfg := env()
	waiterCfg := env()
	waiterCfg.StorageURL = holderCfg.StorageURL // one store
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	holder := New(holderCfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err := holder.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Shutdown)
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: strings.TrimPrefix(site.URL, "http://")})
	req := exportclient.Request{ManualID: "m", Version: "1", URL: site.URL + "/page"}
	if _, err := c.Enqueue(ctx, req); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rendering:
	case <-ctx.Done():
		t.Fatal("the holder never started rendering")
	}
	waiter := New(waiterCfg, Options{Logger: slog.New(slog.DiscardHandler)})
	if err := waiter.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(waiter.Shutdown)
	second, err := c.Enqueue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the waiter is at the gate
	holder.Shutdown()
	stopped := time.Now()
	st, err := c.Wait(ctx, second.TaskID, 20*time.Millisecond)
	took := time.Since(stopped)
	if err != nil || st.State != exportclient.StateCompleted {
		t.Fatalf("the waiting export: %+v, %v", st, err)
	}
	t.Logf("the waiter finished %v after the holder's Shutdown returned", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the waiter finished %v after the holder stopped: the lock was kept until LOCK_TTL", took)
	}
}

// TestWorker_SecretsStayOutOfLogsAndErrors: a failing export of a source URL
// carrying an access token, with a Redis password in the lock URL, writes
// neither secret to any log line of the worker nor to the task's error.
func TestWorker_SecretsStayOutOfLogsAndErrors(t *testing.T) {
	t.Parallel()
	const token, password = "TOKEN-9f2c61", "PASSWORD-5d0e77"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusNotFound) // a final failure: the error is kept
	}))
	t.Cleanup(site.Close)
	redis := testsupport.StartRedis(t)
	if err := redis.Client().ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	authed := "redis://:" + password + "@" + redis.Addr() + "/0"
	host := strings.TrimPrefix(site.URL, "http://")
	cfg, err := config.Load([]string{"REDIS_URL=" + authed, "LOCK_REDIS_URL=" + authed, "STORAGE_URL=file://" + t.TempDir(),
		"ALLOWED_HOSTS=" + host, "LOG_LEVEL=debug", "CHROMIUM_PATH=" + testsupport.ChromiumPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	cfg.AdminAddr = ""
	var logs harness.SyncBuffer
	w := New(cfg, Options{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr(), Password: password}, AllowedHosts: host})
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", URL: site.URL + "/print?token=" + token})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait(ctx, job.TaskID, 20*time.Millisecond)
	w.Shutdown()
	if err != nil || st.State != exportclient.StateFailed {
		t.Fatalf("Wait = %+v, %v; want a failed export", st, err)
	}
	if !strings.Contains(st.Error, "404") {
		t.Errorf("task error %q does not say what failed", st.Error)
	}
	for what, text := range map[string]string{"task error": st.Error, "worker logs": logs.String()} {
		for _, secret := range []string{token, password} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contain %s:\n%s", what, secret, text)
			}
		}
	}
}

// recordingRenderer remembers the HTML it got, fails its first n renders
// with a retryable error, and prints a stub PDF.
type recordingRenderer struct {
	stub     stubRenderer
	mu       sync.Mutex
	failures int
	htmls    []string
}

func (r *recordingRenderer) Render(ctx context.Context, src render.Source, s spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	r.mu.Lock()
	r.htmls = append(r.htmls, src.HTML)
	fail := r.failures > 0
	r.failures--
	r.mu.Unlock()
	if fail {
		return render.Stats{}, fmt.Errorf("%w: test: a flaky browser", render.ErrBrowserCrashed)
	}
	return r.stub.Render(ctx, src, s, sink)
}

// TestWorker_LargeHTMLTravelsBesideTheTask: a 300 KiB inline document is
// stored compressed beside the task, survives a retry, reaches the renderer
// intact, and is gone once the export completed; the completed task keeps a
// few KiB of Redis, not the document. The same document twice is one copy.
func TestWorker_LargeHTMLTravelsBesideTheTask(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	cfg := testConfig(t, redis.URL())
	rr := &recordingRenderer{stub: stubRenderer{pdf: onePagePDF(t)}, failures: 1}
	startWorker(t, cfg, Options{Renderer: rr})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	rdb := redis.Client()
	html := "<!doctype html><p>" + strings.Repeat("A long manual page. ", 15000)
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", HTML: html})
	if err != nil {
		t.Fatal(err)
	}
	if inline := (exportclient.Request{ManualID: "m", Version: "1", HTML: html}).Payload().ArtifactKey(); job.ArtifactKey != inline {
		t.Errorf("artifact key %s by reference, %s inline", job.ArtifactKey, inline)
	}
	st, err := c.Wait(ctx, job.TaskID, 20*time.Millisecond)
	if err != nil || st.State != exportclient.StateCompleted || st.Retried != 1 {
		t.Fatalf("Wait = %+v, %v; want completed on the second attempt", st, err)
	}
	rr.mu.Lock()
	got := rr.htmls
	rr.mu.Unlock()
	if len(got) != 2 || got[0] != html || got[1] != html {
		t.Fatalf("the renderer got %d documents; want the whole document on both attempts", len(got))
	}
	if keys := rdb.Keys(ctx, "pdfexport:html:*").Val(); len(keys) != 0 {
		t.Errorf("source copies left after the export completed: %v", keys)
	}
	if n := rdb.MemoryUsage(ctx, "asynq:{default}:t:"+job.TaskID).Val(); n > 8<<10 {
		t.Errorf("the completed task takes %d bytes of Redis, want ≤ 8 KiB", n)
	}
}

// TestWorker_MissingSourceFailsForGood: an export whose document is gone
// (expired, deleted) fails at once with an error that says so; the
// renderer never runs.
func TestWorker_MissingSourceFailsForGood(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	cfg := testConfig(t, redis.URL())
	rr := &recordingRenderer{stub: stubRenderer{pdf: onePagePDF(t)}}
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	html := "<!doctype html><p>" + strings.Repeat("gone ", 20000)
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", HTML: html})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.Client()
	for _, k := range rdb.Keys(ctx, "pdfexport:html:*").Val() {
		rdb.Del(ctx, k)
	}
	w := New(cfg, Options{Logger: slog.New(slog.DiscardHandler), Renderer: rr})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	st, err := c.Wait(ctx, job.TaskID, 20*time.Millisecond)
	if err != nil || st.State != exportclient.StateFailed || st.Retried != 0 || !strings.Contains(st.Error, "source document") || !strings.Contains(st.Error, "gone") {
		t.Fatalf("Wait = %+v, %v; want failed at once, saying the source document is gone", st, err)
	}
	if len(rr.htmls) != 0 {
		t.Errorf("the renderer ran %d times", len(rr.htmls))
	}
}
