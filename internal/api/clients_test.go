package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api/apiauth"
	"github.com/pdfexport/pdfexport/internal/api/apitest"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// Tokens of the clients in the tests' clients file.
const (
	portalToken = "portal-token-0123456789"
	wikiToken   = "wiki-token-0123456789ab"
	sharedToken = "api-token-0123456789abc" // API_TOKEN
)

const clientsFile = `clients:
  - name: portal
    token: env:APITEST_PORTAL_TOKEN
  - name: wiki
    token: file:%s
    queues: [batch, default]
`

// newClientsAPI serves the API with API_TOKEN = sharedToken and a clients
// file of portal (queues: default) and wiki (batch, default), with file
// storage; it returns the server, the clients file's path and the wiki
// token's file.
func newClientsAPI(t *testing.T, redisAddr string) (srv *httptest.Server, auth *apiauth.Authenticator, path, wikiFile string) {
	t.Helper()
	dir := t.TempDir()
	wikiFile = filepath.Join(dir, "wiki-token")
	path = filepath.Join(dir, "clients.yaml")
	writeSwap(t, wikiFile, wikiToken+"\n")
	writeSwap(t, path, strings.ReplaceAll(clientsFile, "%s", wikiFile))
	t.Setenv("APITEST_PORTAL_TOKEN", portalToken)
	auth, err := apiauth.New(sharedToken, path, []string{"batch", "critical", "default"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redisAddr}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	store, err := storage.Open(context.Background(), storage.Config{URL: "file://" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(apitest.Contract(t, New(Config{Client: c, Auth: auth, Store: store, Logger: slog.New(slog.DiscardHandler)})))
	t.Cleanup(srv.Close)
	return srv, auth, path, wikiFile
}

// writeSwap replaces a file the way a Secret update does: a new file
// renamed over the old.
func writeSwap(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const exportBody = `{"v":1,"manual_id":"a","version":"1","source":{"html":"<p>x"}}`

// TestAPI_ClientsSeeOnlyTheirOwnExports pins OWASP API1 (object-level
// authorization) through the HTTP API: an export belongs to the client
// that enqueued it. Another client's GET, long-poll, download and DELETE
// of it answer 404, word for word the answer for an id that does not
// exist, and leave it alone; the owner's answer as before. API_TOKEN is one
// more client: it does not see the clients' exports, and keeps the exports
// that record no client (enqueued directly, as before API_CLIENTS_FILE),
// which the clients do not see.
func TestAPI_ClientsSeeOnlyTheirOwnExports(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv, _, _, _ := newClientsAPI(t, redis.Addr())

	code, body := do(t, "POST", srv.URL+"/v1/exports", portalToken, exportBody)
	if code != http.StatusAccepted {
		t.Fatalf("portal POST: %d %v", code, body)
	}
	portals := body["task_id"].(string)
	direct, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.Close() })
	job, err := direct.Enqueue(context.Background(), exportclient.Request{ManualID: "legacy", Version: "1", HTML: "<p>x"})
	if err != nil {
		t.Fatal(err)
	}
	legacy := job.TaskID
	_, unknown := do(t, "GET", srv.URL+"/v1/exports/no-such-export", portalToken, "")

	for _, tc := range []struct {
		name, token, method, path string
		want                      int
		wantState                 string
	}{
		{"owner reads", portalToken, "GET", "/v1/exports/" + portals, http.StatusOK, "pending"},
		{"owner long-polls", portalToken, "GET", "/v1/exports/" + portals + "?wait=1s", http.StatusOK, "pending"},
		{"owner downloads before completion", portalToken, "GET", "/v1/exports/" + portals + "/pdf", http.StatusConflict, "pending"},
		{"other client reads", wikiToken, "GET", "/v1/exports/" + portals, http.StatusNotFound, ""},
		{"other client long-polls", wikiToken, "GET", "/v1/exports/" + portals + "?wait=5s", http.StatusNotFound, ""},
		{"other client downloads", wikiToken, "GET", "/v1/exports/" + portals + "/pdf", http.StatusNotFound, ""},
		{"other client cancels", wikiToken, "DELETE", "/v1/exports/" + portals, http.StatusNotFound, ""},
		{"API_TOKEN reads a client's", sharedToken, "GET", "/v1/exports/" + portals, http.StatusNotFound, ""},
		{"API_TOKEN cancels a client's", sharedToken, "DELETE", "/v1/exports/" + portals, http.StatusNotFound, ""},
		{"API_TOKEN reads one with no client", sharedToken, "GET", "/v1/exports/" + legacy, http.StatusOK, "pending"},
		{"a client reads one with no client", portalToken, "GET", "/v1/exports/" + legacy, http.StatusNotFound, ""},
		{"a client cancels one with no client", wikiToken, "DELETE", "/v1/exports/" + legacy, http.StatusNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			code, body := do(t, tc.method, srv.URL+tc.path, tc.token, "")
			if code != tc.want {
				t.Fatalf("%d %v, want %d", code, body, tc.want)
			}
			if tc.wantState != "" && body["state"] != tc.wantState {
				t.Errorf("state %v, want %s", body["state"], tc.wantState)
			}
			if code == http.StatusNotFound {
				if body["error"] != unknown["error"] {
					t.Errorf("404 %v differs from an unknown id's %v: it tells the export exists", body, unknown)
				}
				if took := time.Since(start); took > 2*time.Second {
					t.Errorf("the 404 took %s: it waited for another client's export", took)
				}
			}
		})
	}
	// Nobody else's DELETE touched them.
	for _, id := range []string{portals, legacy} {
		if st, err := direct.Status(context.Background(), id); err != nil || st.State != exportclient.StatePending {
			t.Errorf("%s after the other clients' DELETEs: %v %v, want pending", id, st.State, err)
		}
	}
	// The owner cancels its own.
	if code, body := do(t, "DELETE", srv.URL+"/v1/exports/"+portals, portalToken, ""); code != http.StatusOK || body["state"] != "canceled" {
		t.Errorf("owner DELETE: %d %v", code, body)
	}
}

// TestAPI_ClientsEnqueueOnlyToTheirQueues: a queue outside the client's set
// is a 403 naming the queue (and nothing is queued); one inside it is
// accepted; without ?queue= a client goes to default. API_TOKEN has every
// queue the workers serve.
func TestAPI_ClientsEnqueueOnlyToTheirQueues(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv, _, _, _ := newClientsAPI(t, redis.Addr())
	insp := asynq.NewInspectorFromRedisClient(redis.Client())
	for _, tc := range []struct {
		name, token, query string
		want               int
		wantQueue          string
	}{
		{"portal to critical", portalToken, "?queue=critical", http.StatusForbidden, "critical"},
		{"portal to batch", portalToken, "?queue=batch", http.StatusForbidden, "batch"},
		{"wiki to critical", wikiToken, "?queue=critical", http.StatusForbidden, "critical"},
		{"portal by default", portalToken, "", http.StatusAccepted, "default"},
		{"wiki to batch", wikiToken, "?queue=batch", http.StatusAccepted, "batch"},
		{"API_TOKEN to critical", sharedToken, "?queue=critical", http.StatusAccepted, "critical"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, "POST", srv.URL+"/v1/exports"+tc.query, tc.token, exportBody)
			if code != tc.want {
				t.Fatalf("%d %v, want %d", code, body, tc.want)
			}
			if code == http.StatusForbidden {
				if msg, _ := body["error"].(string); body["field"] != "queue" || !strings.Contains(msg, `"`+tc.wantQueue+`"`) {
					t.Errorf("403 %v does not name the queue %s", body, tc.wantQueue)
				}
				return
			}
			info, err := insp.GetTaskInfo(tc.wantQueue, body["task_id"].(string))
			if err != nil {
				t.Fatalf("not on queue %s: %v", tc.wantQueue, err)
			}
			if tc.token == sharedToken && strings.Contains(string(info.Payload), `"client"`) {
				t.Errorf("API_TOKEN's envelope names a client: %s", info.Payload)
			}
		})
	}
	// The three refusals queued nothing: three accepted tasks in all.
	n := 0
	for _, q := range []string{"critical", "default", "batch"} {
		if qi, err := insp.GetQueueInfo(q); err == nil {
			n += qi.Size
		}
	}
	if n != 3 {
		t.Errorf("%d tasks queued, want 3", n)
	}
}

// TestAPI_ClientsFileReloads: a token rotated in the file a client's token
// names takes over without a restart (the old one is a 401), and a broken
// clients file keeps the clients in force.
func TestAPI_ClientsFileReloads(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv, auth, path, wikiFile := newClientsAPI(t, redis.Addr())
	auth.SetPollInterval(20 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); auth.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	status := func(token string) int {
		code, _ := do(t, "GET", srv.URL+"/v1/exports/x", token, "")
		return code
	}
	if got := status(wikiToken); got != http.StatusNotFound {
		t.Fatalf("wiki before the rotation: %d, want 404 (authenticated, no such export)", got)
	}
	const rotated = "wiki-token-rotated-456789"
	writeSwap(t, wikiFile, rotated)
	testsupport.Eventually(t, 5*time.Second, func() error {
		return testsupport.Unless(status(rotated) == http.StatusNotFound, "the rotated token is not accepted yet")
	})
	if got := status(wikiToken); got != http.StatusUnauthorized {
		t.Errorf("the old wiki token after the rotation: %d, want 401", got)
	}
	writeSwap(t, path, "clients: [{name: wiki}]") // no token: refused, the clients stay
	time.Sleep(200 * time.Millisecond)
	if got := status(rotated); got != http.StatusNotFound {
		t.Errorf("after a broken file: %d, want the clients in force (404)", got)
	}
	if got := status(portalToken); got != http.StatusNotFound {
		t.Errorf("portal after a broken file: %d, want 404", got)
	}
}

// TestAPI_LongPollsAreCapped: past MaxWaiters long-polls waiting at once,
// another ?wait= on an export that is not final answers 429 with
// Retry-After at once; a plain GET, and a long-poll on a final export,
// still answer; once a waiter leaves, a long-poll waits again.
func TestAPI_LongPollsAreCapped(t *testing.T) {
	redis := testsupport.StartRedis(t)
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	a := newAPI(Config{Client: c, MaxWaiters: 2, Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(apitest.Contract(t, traced(a, a.mux)))
	t.Cleanup(srv.Close)

	var ids []string
	for range 3 {
		code, body := do(t, "POST", srv.URL+"/v1/exports", "", exportBody)
		if code != http.StatusAccepted {
			t.Fatalf("POST: %d %v", code, body)
		}
		ids = append(ids, body["task_id"].(string))
	}
	waiting := make(chan int, 2)
	for _, id := range ids[:2] {
		go func() {
			code, _ := do(t, "GET", srv.URL+"/v1/exports/"+id+"?wait=4s", "", "")
			waiting <- code
		}()
	}
	testsupport.Eventually(t, 5*time.Second, func() error {
		return testsupport.Unless(len(a.waiters) == 2, "%d long-polls waiting, want 2", len(a.waiters))
	})

	start := time.Now()
	req, _ := http.NewRequest("GET", srv.URL+"/v1/exports/"+ids[2]+"?wait=3s", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || time.Since(start) > time.Second {
		t.Fatalf("third long-poll: %d Retry-After %q after %s, want 429 with Retry-After at once",
			resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(start))
	}
	if code, body := do(t, "GET", srv.URL+"/v1/exports/"+ids[2], "", ""); code != http.StatusOK {
		t.Errorf("plain GET beside the cap: %d %v", code, body)
	}
	if code, _ := do(t, "DELETE", srv.URL+"/v1/exports/"+ids[2], "", ""); code != http.StatusOK {
		t.Fatalf("DELETE: %d", code)
	}
	if code, body := do(t, "GET", srv.URL+"/v1/exports/"+ids[2]+"?wait=3s", "", ""); code != http.StatusOK || body["state"] != "canceled" {
		t.Errorf("long-poll of a final export beside the cap: %d %v, want 200 canceled", code, body)
	}
	for range 2 {
		if code := <-waiting; code != http.StatusOK {
			t.Errorf("a long-poll within the cap: %d, want 200", code)
		}
	}
	if code, body := do(t, "GET", srv.URL+"/v1/exports/"+ids[0]+"?wait=1s", "", ""); code != http.StatusOK {
		t.Errorf("long-poll once the waiters left: %d %v", code, body)
	}
}
