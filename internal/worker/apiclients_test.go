package worker

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api"
	"github.com/pdfexport/pdfexport/internal/api/apiauth"
	"github.com/pdfexport/pdfexport/internal/api/apitest"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestAPI_ACompletedExportIsItsClientsOnly: on a real worker, an export a
// client enqueued through the API completes (the worker reads the
// envelope's client), its client long-polls it and downloads the PDF,
// while another client, and API_TOKEN, get a 404 for its status, its
// long-poll and its PDF, and a 404 for its DELETE, which leaves it
// completed.
func TestAPI_ACompletedExportIsItsClientsOnly(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	storeDir := t.TempDir()
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+storeDir, "ADMIN_ADDR=", "CHROMIUM_PATH="+testsupport.ChromiumPath(t))
	startWorker(t, cfg, Options{})
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	store, err := storage.Open(t.Context(), storage.Config{URL: cfg.StorageURL})
	if err != nil {
		t.Fatal(err)
	}
	const owner, other, shared = "owner-token-0123456789", "other-token-0123456789", "shared-token-0123456789"
	clients := filepath.Join(t.TempDir(), "clients.json")
	if err := os.WriteFile(clients, []byte(`{"clients": [{"name": "owner", "token": "`+owner+`"}, {"name": "other", "token": "`+other+`"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := apiauth.New(shared, clients, cfg.QueueNames(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(apitest.Contract(t, api.New(api.Config{Client: c, Auth: auth, Store: store, Logger: slog.New(slog.DiscardHandler)})))
	t.Cleanup(srv.Close)
	call := func(method, path, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{"v":1,"manual_id":"ops-guide","version":"1","source":{"html":"<h1>Ops</h1>"}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := call("POST", "/v1/exports", owner)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", code, body)
	}
	id := body[strings.Index(body, `"task_id":"`)+len(`"task_id":"`):]
	id = id[:strings.Index(id, `"`)]
	if code, body := call("GET", "/v1/exports/"+id+"?wait=30s", owner); code != http.StatusOK || !strings.Contains(body, `"state":"completed"`) {
		t.Fatalf("owner's long-poll: %d %s", code, body)
	}
	if code, body := call("GET", "/v1/exports/"+id+"/pdf", owner); code != http.StatusOK || !strings.HasPrefix(body, "%PDF-") {
		t.Fatalf("owner's download: %d, %.40q", code, body)
	}
	for _, token := range []string{other, shared} {
		for _, r := range []struct{ method, path string }{
			{"GET", "/v1/exports/" + id}, {"GET", "/v1/exports/" + id + "?wait=5s"}, {"GET", "/v1/exports/" + id + "/pdf"}, {"DELETE", "/v1/exports/" + id},
		} {
			if code, body := call(r.method, r.path, token); code != http.StatusNotFound || strings.Contains(body, "PDF-") {
				t.Errorf("%s %s by another client: %d %.60q, want 404", r.method, r.path, code, body)
			}
		}
	}
	if st, err := c.Status(t.Context(), id); err != nil || st.State != exportclient.StateCompleted || st.Client != "owner" {
		t.Errorf("after the others' DELETEs: %s client %q %v, want completed, owner's", st.State, st.Client, err)
	}
}
