package worker

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// portal is a private docs site: /manual answers only a request with the
// portal's token (operator credentials) or a user's session cookie
// (per-export credentials), and shows whose view it is.
func portal(t *testing.T, token string, users map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		viewer := ""
		if r.Header.Get("Authorization") == "Bearer "+token {
			viewer = "SERVICE-VIEW"
		}
		if c, err := r.Cookie("sid"); err == nil && users[c.Value] != "" {
			viewer = users[c.Value] + "-VIEW"
		}
		if viewer == "" {
			http.Error(w, "login required", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "<!doctype html><title>portal</title><h1>%s</h1>", viewer)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWorker_RendersPrivateSources: with SOURCE_AUTH_FILE the worker renders
// a page behind a login; per-export cookies render it as each user, under
// artifact keys that differ by user and say nothing of the cookie; the same
// user again reuses that user's artifact; the secrets are in no task
// payload, log line or result, and leave Redis once their exports are final.
func TestWorker_RendersPrivateSources(t *testing.T) {
	// Serial (no t.Parallel): it sets PORTAL_TOKEN (t.Setenv).
	const token = "portal-token-7c1d"
	users := map[string]string{"cookie-alice-31f0": "ALICE", "cookie-bob-88a2": "BOB"}
	site := portal(t, token, users)
	host := strings.TrimPrefix(site.URL, "http://")
	rules := filepath.Join(t.TempDir(), "source-auth.json")
	if err := os.WriteFile(rules, []byte(fmt.Sprintf(`{"rules": [{"hosts": %q, "headers": {"Authorization": "env:PORTAL_TOKEN"}}]}`, "http://"+host)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PORTAL_TOKEN", "Bearer "+token)
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+host, "SOURCE_AUTH_FILE="+rules, "LOG_LEVEL=debug")
	var logs harness.SyncBuffer
	startWorker(t, cfg, Options{Logger: debugLogger(&logs)})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: host})

	export := func(req exportclient.Request) (exportclient.Status, exportclient.Enqueued, string) {
		t.Helper()
		req.ManualID, req.Version, req.URL = "portal", "1", site.URL+"/manual"
		job, err := c.Enqueue(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		info, err := asynq.NewInspectorFromRedisClient(redis.Client()).GetTaskInfo("default", job.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Wait(ctx, job.TaskID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != exportclient.StateCompleted {
			t.Fatalf("%+v", st)
		}
		return st, job, string(info.Payload)
	}
	pdfSays := func(st exportclient.Status, want string) {
		t.Helper()
		pdf, err := os.ReadFile(strings.TrimPrefix(st.Result.URL, "file://"))
		if err != nil {
			t.Fatal(err)
		}
		if text := testsupport.PDFText(t, pdf); !strings.Contains(text, want) {
			t.Errorf("PDF of %s shows %q, want %s", st.Result.ArtifactKey, text, want)
		}
	}

	service, serviceJob, _ := export(exportclient.Request{})
	pdfSays(service, "SERVICE-VIEW")

	var keys []string
	var payloads []string
	for _, sid := range []string{"cookie-alice-31f0", "cookie-bob-88a2", "cookie-alice-31f0"} {
		st, job, payload := export(exportclient.Request{Cookies: []exportclient.Cookie{{Name: "sid", Value: sid}}})
		pdfSays(st, users[sid]+"-VIEW")
		keys = append(keys, job.ArtifactKey)
		payloads = append(payloads, payload)
		if len(keys) == 3 && st.Result.Rendered {
			t.Errorf("alice's second export rendered again; want her artifact reused")
		}
	}
	if keys[0] == keys[1] || keys[0] != keys[2] || keys[0] == serviceJob.ArtifactKey || keys[1] == serviceJob.ArtifactKey {
		t.Errorf("artifact keys: service %s, alice %s, bob %s, alice again %s: want one per viewer", serviceJob.ArtifactKey, keys[0], keys[1], keys[2])
	}
	secrets := []string{token, "cookie-alice-31f0", "cookie-bob-88a2"}
	for what, text := range map[string]string{"payloads": strings.Join(payloads, "\n"), "logs": logs.String(), "keys": strings.Join(keys, " ")} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contain the secret %s", what, s)
			}
		}
	}
	if !strings.Contains(payloads[0], `"cookie_names":["sid"]`) {
		t.Errorf("payload does not name the cookie it sent: %s", payloads[0])
	}
	left, err := redis.Client().Keys(ctx, "pdfexport:credentials:{*}").Result()
	if err != nil || len(left) != 0 {
		t.Errorf("credentials left in Redis after the exports were final: %v %v", left, err)
	}
}
