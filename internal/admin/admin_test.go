package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func get(t *testing.T, srv *httptest.Server, path string, auth ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	if len(auth) == 2 {
		req.SetBasicAuth(auth[0], auth[1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReadyz_NamesWhatIsNotReady(t *testing.T) {
	srv := httptest.NewServer(Handler(Config{Checks: map[string]Check{
		"redis":    func(context.Context) error { return nil },
		"chromium": func(context.Context) error { return errors.New("browser exited") },
		"storage": func(ctx context.Context) error {
			<-ctx.Done() // a hung dependency is bounded by CheckTimeout
			return ctx.Err()
		},
	}, CheckTimeout: 200 * time.Millisecond}))
	t.Cleanup(srv.Close)
	code, body := get(t, srv, "/readyz")
	var out struct {
		Failing map[string]string `json:"failing"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || out.Failing["chromium"] != "browser exited" || out.Failing["storage"] == "" || out.Failing["redis"] != "" {
		t.Fatalf("readyz = %d %s", code, body)
	}
	if code, _ := get(t, srv, "/healthz"); code != http.StatusOK {
		t.Fatalf("healthz = %d", code)
	}
}

func TestMetrics_ExposesContractNames(t *testing.T) {
	redis := testsupport.StartRedis(t)
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: redis.Addr()})
	t.Cleanup(func() { _ = insp.Close() })
	client := asynq.NewClient(asynq.RedisClientOpt{Addr: redis.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	if _, err := client.Enqueue(asynq.NewTask("pdf:export", []byte("{}")), asynq.Queue("critical")); err != nil {
		t.Fatal(err)
	}
	m := NewMetrics().WithQueueMetrics(insp)
	m.ExportDone("rendered", time.Second)
	m.RenderDone("ok", time.Second)
	m.LockAcquire("fail_open")
	m.LockWait(time.Millisecond)
	m.LockLost()
	m.StorageBytes("put", 10)
	m.BrowserRestarted()
	srv := httptest.NewServer(Handler(Config{Metrics: m}))
	t.Cleanup(srv.Close)
	_, body := get(t, srv, "/metrics")
	for _, want := range []string{
		`pdfexport_exports_total{outcome="rendered"} 1`, `pdfexport_renders_total{result="ok"} 1`,
		"pdfexport_render_seconds_bucket", `pdfexport_lock_acquire_total{result="fail_open"} 1`,
		"pdfexport_lock_wait_seconds_bucket", "pdfexport_lock_lost_total 1", `pdfexport_storage_bytes_total{op="put"} 10`,
		"pdfexport_browser_restarts_total 1", `asynq_queue_size{queue="critical"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestDashboard_BasicAuthAndReadablePayloads(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := httptest.NewServer(Handler(Config{Dashboard: &DashboardConfig{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, User: "ops", Password: "pw"}}))
	t.Cleanup(srv.Close)
	if code, _ := get(t, srv, "/monitoring/"); code != http.StatusUnauthorized {
		t.Fatalf("dashboard without credentials = %d, want 401", code)
	}
	if code, _ := get(t, srv, "/monitoring/", "ops", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("dashboard with a wrong password = %d, want 401", code)
	}
	code, body := get(t, srv, "/monitoring/", "ops", "pw")
	if code != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("dashboard = %d %.200s", code, body)
	}
	code, body = get(t, srv, "/monitoring/api/queues", "ops", "pw")
	if code != http.StatusOK || !strings.Contains(body, "queues") {
		t.Fatalf("dashboard API = %d %.200s", code, body)
	}
	got := readableJSON([]byte(`{"v":1,"source":{"html":"` + strings.Repeat("x", 5000) + `"}}`))
	if !strings.Contains(got, "\n  \"source\"") || !strings.Contains(got, "(5000 bytes)") || len(got) > 1000 {
		t.Fatalf("readableJSON = %q", got)
	}
}

// TestDashboard_RefusesCrossOriginChanges: a browser replays basic-auth
// credentials on requests another site makes it send; a state-changing
// request whose Origin is not the dashboard's is answered 403 before it
// reaches asynqmon. Same-origin changes and reads pass.
func TestDashboard_RefusesCrossOriginChanges(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := httptest.NewServer(Handler(Config{Dashboard: &DashboardConfig{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, User: "ops", Password: "pw"}}))
	t.Cleanup(srv.Close)
	send := func(method, origin, site string) int {
		req, _ := http.NewRequest(method, srv.URL+"/monitoring/api/queues/default:pause", nil)
		req.SetBasicAuth("ops", "pw")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("POST", "https://evil.example", "cross-site"); code != http.StatusForbidden {
		t.Errorf("cross-site POST = %d, want 403", code)
	}
	if code := send("POST", "https://evil.example", ""); code != http.StatusForbidden {
		t.Errorf("POST from another Origin = %d, want 403", code)
	}
	if code := send("POST", srv.URL, "same-origin"); code == http.StatusForbidden {
		t.Errorf("same-origin POST = 403")
	}
	if code := send("GET", "https://evil.example", "cross-site"); code == http.StatusForbidden {
		t.Errorf("cross-site GET (a read) = 403")
	}
}

// TestReadableJSON_RedactsURLs: the dashboard shows no query value (an
// access token of a source page, a presigned link's signature) and no
// password of any URL in a payload or result.
func TestReadableJSON_RedactsURLs(t *testing.T) {
	got := readableJSON([]byte(`{"source":{"url":"https://docs.example.com/p?token=TOK-8c1"},"url":"https://s3/b/k.pdf?X-Amz-Signature=SIG-77a","error":"dial redis://:PW-3b@h:1 failed"}`))
	for _, secret := range []string{"TOK-8c1", "SIG-77a", "PW-3b"} {
		if strings.Contains(got, secret) {
			t.Errorf("the dashboard shows %s:\n%s", secret, got)
		}
	}
	if !strings.Contains(got, "https://docs.example.com/p?token=REDACTED") {
		t.Errorf("the source URL is no longer recognizable:\n%s", got)
	}
}
