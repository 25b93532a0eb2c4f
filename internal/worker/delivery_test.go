package worker

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api"
	"github.com/pdfexport/pdfexport/internal/api/apitest"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// callbackSecret is CALLBACK_SECRET: whsec_ and the base64 of a 24-byte key.
const callbackSecret = "whsec_d29ya2VyLXRlc3QtY2FsbGJhY2sta2V5"

// hookReceiver is an API server's callback endpoint: it verifies each
// delivery and records it; it refuses the first attempt of every delivery
// whose id is in failFirst, so that one is retried.
type hookReceiver struct {
	srv       *httptest.Server
	mu        sync.Mutex
	got       []delivery
	attempts  map[string]int
	failFirst func(f exportclient.Final) bool
}

type delivery struct {
	id    string
	final exportclient.Final
	body  string
	err   error // of VerifyCallback
}

func newHookReceiver(t *testing.T, failFirst func(exportclient.Final) bool) *hookReceiver {
	h := &hookReceiver{attempts: map[string]int{}, failFirst: failFirst}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{id: r.Header.Get(exportclient.HeaderWebhookID), body: string(body),
			err: exportclient.VerifyCallback(r.Header, body, callbackSecret)}
		_ = json.Unmarshal(body, &d.final)
		h.mu.Lock()
		h.got = append(h.got, d)
		h.attempts[d.id]++
		first := h.attempts[d.id] == 1
		h.mu.Unlock()
		if first && h.failFirst != nil && h.failFirst(d.final) {
			http.Error(w, "not now", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) deliveries() []delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

func loadConfig(t *testing.T, environ ...string) config.Config {
	t.Helper()
	cfg, err := config.Load(environ)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckWorker(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startWorker starts a worker for the test and shuts it down at its end;
// a zero opts.Logger discards the logs.
func startWorker(t *testing.T, cfg config.Config, opts Options) *Worker {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	w := New(cfg, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	return w
}

// debugLogger logs everything as JSON to w.
func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newClient is an exportclient for the test, closed at its end.
func newClient(t *testing.T, cfg exportclient.Config) *exportclient.Client {
	t.Helper()
	c, err := exportclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestWorker_CallbacksForEveryFinalOutcome: two requests for one document
// each get their own signed callback (completed, one rendered, both with
// the download URL); an export the worker refuses and one whose page is
// missing get a failed one; a receiver that refuses the first attempt gets
// the same body under the same delivery id again.
func TestWorker_CallbacksForEveryFinalOutcome(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "<!doctype html><h1>"+r.URL.Path+"</h1>")
	}))
	t.Cleanup(site.Close)
	siteHost := strings.TrimPrefix(site.URL, "http://")
	hooks := newHookReceiver(t, func(f exportclient.Final) bool { return f.State == "completed" })
	hookHost := strings.TrimPrefix(hooks.srv.URL, "http://")
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+siteHost, "MAX_RETRY=2",
		"CALLBACK_ALLOWED_HOSTS="+hookHost, "CALLBACK_SECRET="+callbackSecret, "API_PUBLIC_URL=https://pdf.example.test/")
	startWorker(t, cfg, Options{})
	// The client allows a host the worker does not: the worker refuses.
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()},
		AllowedHosts: siteHost + ",docs.example.com", CallbackAllowedHosts: hookHost})
	ctx := context.Background()
	hook := hooks.srv.URL + "/hooks/pdf"
	enqueue := func(r exportclient.Request) string {
		r.CallbackURL = hook
		job, err := c.Enqueue(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return job.TaskID
	}
	dupA := enqueue(exportclient.Request{ManualID: "m", Version: "1", URL: site.URL + "/doc"})
	dupB := enqueue(exportclient.Request{ManualID: "m", Version: "1", URL: site.URL + "/doc"})
	refused := enqueue(exportclient.Request{ManualID: "m", Version: "2", URL: "https://docs.example.com/x"})
	missing := enqueue(exportclient.Request{ManualID: "m", Version: "3", URL: site.URL + "/missing"})

	want := map[string]string{dupA: "completed", dupB: "completed", refused: "failed", missing: "failed"}
	accepted := func() map[string]delivery { // the last delivery of each task
		last := map[string]delivery{}
		for _, d := range hooks.deliveries() {
			last[d.final.TaskID] = d
		}
		return last
	}
	testsupport.Eventually(t, 60*time.Second, func() error {
		got := accepted()
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		a, b := hooks.attempts[outcome.CallbackTaskID(dupA)], hooks.attempts[outcome.CallbackTaskID(dupB)]
		return testsupport.Unless(len(got) == len(want) && a >= 2 && b >= 2,
			"%d of %d exports' callbacks accepted, %d and %d attempts at the two refused first; want all, retries included", len(got), len(want), a, b)
	})
	rendered := 0
	for id, d := range accepted() {
		if d.err != nil {
			t.Errorf("%s: signature: %v", id, d.err)
		}
		if d.id != outcome.CallbackTaskID(id) || d.final.State != want[id] || d.final.ManualID != "m" {
			t.Errorf("%s: delivery %q, state %q (want %s)", id, d.id, d.final.State, want[id])
		}
		if d.final.State == "completed" {
			r := d.final.Result
			if r == nil || r.Pages != 1 || r.DownloadURL != "https://pdf.example.test/v1/exports/"+id+"/pdf" {
				t.Errorf("%s: result %+v", id, r)
				continue
			}
			if r.Rendered {
				rendered++
			}
		}
	}
	if rendered != 1 {
		t.Errorf("%d of the duplicates rendered, want 1", rendered)
	}
	if e := accepted()[refused].final.Error; !strings.Contains(e, "source.url") {
		t.Errorf("the refused export's callback says %q, want the field", e)
	}
	if e := accepted()[missing].final.Error; !strings.Contains(e, "404") {
		t.Errorf("the missing page's callback says %q, want the status", e)
	}
	bodies := map[string][]string{}
	for _, d := range hooks.deliveries() {
		bodies[d.id] = append(bodies[d.id], d.body)
	}
	for _, id := range []string{dupA, dupB} {
		b := bodies[outcome.CallbackTaskID(id)]
		if len(b) < 2 || b[0] != b[1] {
			t.Errorf("%s: a retried delivery must repeat the body: %q", id, b)
		}
	}
}

// TestWorker_CancelStopsARunningRender: an export canceled while its page is
// loading stops, releases its lock as failed (the duplicate waiting for it
// renders instead), stores nothing, is canceled (not retried) and says so
// in its callback.
func TestWorker_CancelStopsARunningRender(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	release := make(chan struct{})
	var once sync.Once
	requested := make(chan struct{}, 8)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requested <- struct{}{}
		first := false
		once.Do(func() { first = true })
		if first { // the first load hangs until the test ends
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, "<!doctype html><h1>second load</h1>")
	}))
	t.Cleanup(func() { close(release); site.Close() })
	siteHost := strings.TrimPrefix(site.URL, "http://")
	hooks := newHookReceiver(t, nil)
	hookHost := strings.TrimPrefix(hooks.srv.URL, "http://")
	storeDir := t.TempDir()
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+storeDir, "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+siteHost,
		"CALLBACK_ALLOWED_HOSTS="+hookHost, "CALLBACK_SECRET="+callbackSecret)
	startWorker(t, cfg, Options{})
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: siteHost, CallbackAllowedHosts: hookHost})
	ctx := context.Background()
	req := exportclient.Request{ManualID: "m", Version: "1", URL: site.URL + "/slow", CallbackURL: hooks.srv.URL + "/h"}
	first, err := c.Enqueue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-requested:
	case <-time.After(30 * time.Second):
		t.Fatal("the page was never requested")
	}
	second, err := c.Enqueue(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the duplicate waits at the gate

	start := time.Now()
	st, err := c.Cancel(ctx, first.TaskID)
	if err != nil || st.State != exportclient.StateCanceled {
		t.Fatalf("Cancel = %+v, %v", st, err)
	}
	t.Logf("canceled a running render in %s", time.Since(start).Round(time.Millisecond))
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	dup, err := c.Wait(wctx, second.TaskID, 100*time.Millisecond)
	if err != nil || dup.State != exportclient.StateCompleted || !dup.Result.Rendered {
		t.Fatalf("the duplicate: %+v (%+v), %v", dup, dup.Result, err)
	}
	after, err := c.Status(ctx, first.TaskID)
	if err != nil || after.State != exportclient.StateCanceled || !strings.Contains(after.Error, "canceled") {
		t.Errorf("the canceled export: %+v, %v", after, err)
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: redis.Addr()})
	defer insp.Close()
	if info, err := insp.GetTaskInfo("default", first.TaskID); err != nil || info.State != asynq.TaskStateArchived {
		t.Errorf("asynq state of the canceled export: %v, %v; want archived (never run again)", info, err)
	}
	if n := len(requested); n != 1 { // the duplicate's load; the canceled one's was taken above
		t.Errorf("the page was loaded %d more times, want 1 (the duplicate's)", n)
	}
	store, err := storage.Open(ctx, storage.Config{URL: "file://" + storeDir})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := store.Stat(ctx, strings.TrimPrefix(dup.Result.ArtifactKey, "/"))
	if err != nil || obj.Metadata["task-id"] != second.TaskID {
		t.Errorf("stored artifact %+v (%v): want the duplicate's", obj, err)
	}
	testsupport.Eventually(t, 30*time.Second, func() error {
		n := len(hooks.deliveries())
		return testsupport.Unless(n >= 2, "%d callbacks delivered, want 2", n)
	})
	for _, d := range hooks.deliveries() {
		if want := map[string]string{first.TaskID: "canceled", second.TaskID: "completed"}[d.final.TaskID]; d.final.State != want || d.err != nil {
			t.Errorf("callback of %s: %s (%v), want %s", d.final.TaskID, d.final.State, d.err, want)
		}
	}
}

// TestAPI_DeliversThePDF: through bin/api's handler on a real worker, a
// client long-polls an export to completion and downloads its PDF: streamed
// with ETag, Range and 304 from file storage; from S3 a redirect to a
// presigned URL that serves it, or a stream with ?redirect=false.
func TestAPI_DeliversThePDF(t *testing.T) {
	// Serial (no t.Parallel): its s3 case sets the AWS variables (t.Setenv).
	for _, backend := range []string{"file", "s3"} {
		t.Run(backend, func(t *testing.T) {
			redis := testsupport.StartRedis(t)
			env := []string{"REDIS_URL=" + redis.URL(), "ADMIN_ADDR=", "CHROMIUM_PATH=" + testsupport.ChromiumPath(t)}
			if backend == "file" {
				env = append(env, "STORAGE_URL=file://"+t.TempDir())
			} else {
				s3 := testsupport.StartS3(t)
				t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey)
				t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey)
				env = append(env, "STORAGE_URL=s3://"+s3.Bucket+"/pdf", "S3_ENDPOINT="+s3.Endpoint(), "S3_FORCE_PATH_STYLE=true", "S3_REGION="+s3.Region)
			}
			cfg := loadConfig(t, env...)
			startWorker(t, cfg, Options{})
			c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
			ctx := context.Background()
			store, err := storage.Open(ctx, storage.Config{URL: cfg.StorageURL, S3Endpoint: cfg.S3Endpoint, S3Region: cfg.S3Region, S3ForcePathStyle: true})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(apitest.Contract(t, api.New(api.Config{Client: c, Store: store, Token: "tok", Logger: slog.New(slog.DiscardHandler)})))
			t.Cleanup(srv.Close)
			call := func(method, path string, header ...string) *http.Response {
				t.Helper()
				req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{"v":1,"manual_id":"ops-guide","version":"2026.11","source":{"html":"<h1>Ops</h1>"}}`))
				req.Header.Set("Authorization", "Bearer tok")
				for i := 0; i+1 < len(header); i += 2 {
					req.Header.Set(header[i], header[i+1])
				}
				client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { resp.Body.Close() })
				return resp
			}
			resp := call("POST", "/v1/exports", "Content-Type", "application/json")
			var created struct {
				TaskID string `json:"task_id"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&created)
			if resp.StatusCode != http.StatusAccepted || created.TaskID == "" {
				t.Fatalf("POST: %d", resp.StatusCode)
			}
			if code := call("GET", "/v1/exports/"+created.TaskID+"/pdf").StatusCode; code != http.StatusConflict && code != http.StatusOK {
				t.Errorf("PDF of an export in flight: %d, want 409 (or 200 if it was that fast)", code)
			}
			start := time.Now()
			resp = call("GET", "/v1/exports/"+created.TaskID+"?wait=30s")
			var st struct {
				State  string `json:"state"`
				Result struct {
					ETag  string `json:"etag"`
					Bytes int64  `json:"bytes"`
				} `json:"result"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&st)
			if resp.StatusCode != http.StatusOK || st.State != "completed" {
				t.Fatalf("long-poll: %d %+v after %s", resp.StatusCode, st, time.Since(start))
			}
			pdf := call("GET", "/v1/exports/"+created.TaskID+"/pdf")
			if backend == "s3" {
				loc := pdf.Header.Get("Location")
				if pdf.StatusCode != http.StatusFound || !strings.HasPrefix(loc, cfg.S3Endpoint+"/") || !strings.Contains(loc, "X-Amz-Signature=") {
					t.Fatalf("S3 download: %d Location %q, want 302 to a presigned URL", pdf.StatusCode, loc)
				}
				presigned, err := http.Get(loc)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(presigned.Body)
				presigned.Body.Close()
				if presigned.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "%PDF-") || int64(len(body)) != st.Result.Bytes {
					t.Fatalf("presigned URL: %d, %d bytes", presigned.StatusCode, len(body))
				}
				pdf = call("GET", "/v1/exports/"+created.TaskID+"/pdf?redirect=false")
			}
			body, _ := io.ReadAll(pdf.Body)
			if pdf.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "%PDF-") || int64(len(body)) != st.Result.Bytes ||
				pdf.Header.Get("Content-Type") != "application/pdf" || pdf.Header.Get("ETag") != `"`+st.Result.ETag+`"` ||
				pdf.Header.Get("Content-Disposition") != `attachment; filename=ops-guide-2026.11.pdf` {
				t.Fatalf("download: %d, %d bytes, headers %v", pdf.StatusCode, len(body), pdf.Header)
			}
			if code := call("GET", "/v1/exports/"+created.TaskID+"/pdf?redirect=false", "If-None-Match", `"`+st.Result.ETag+`"`).StatusCode; code != http.StatusNotModified {
				t.Errorf("If-None-Match: %d, want 304", code)
			}
			if backend == "file" {
				part := call("GET", "/v1/exports/"+created.TaskID+"/pdf", "Range", "bytes=0-4")
				b, _ := io.ReadAll(part.Body)
				if part.StatusCode != http.StatusPartialContent || string(b) != "%PDF-" || part.Header.Get("Last-Modified") == "" {
					t.Errorf("Range: %d %q %v", part.StatusCode, b, part.Header)
				}
			}
			if code := call("DELETE", "/v1/exports/"+created.TaskID).StatusCode; code != http.StatusConflict {
				t.Errorf("DELETE of a completed export: %d, want 409", code)
			}
			if code := call("GET", "/v1/exports/no-such-task/pdf").StatusCode; code != http.StatusNotFound {
				t.Errorf("PDF of an unknown export: %d, want 404", code)
			}
		})
	}
}
