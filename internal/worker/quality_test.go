package worker

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestWorker_ResultsCarryTheRenderWarnings: an export of a page whose
// diagram is missing completes with a warning naming it; a reuse of the
// artifact reports the same warning; with fail_on_resource_errors the
// reuse fails for good, and a first render fails for good storing nothing.
func TestWorker_ResultsCarryTheRenderWarnings(t *testing.T) {
	t.Parallel()
	redis := testsupport.StartRedis(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/manual" {
			_, _ = io.WriteString(w, `<!doctype html><h1>Install</h1><img src="/diagrams/network.png" alt="network">`)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(site.Close)
	host := strings.TrimPrefix(site.URL, "http://")
	store := t.TempDir()
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+store, "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+host)
	startWorker(t, cfg, Options{})
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: host})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	export := func(version string, failOn bool) exportclient.Status {
		t.Helper()
		job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: version, URL: site.URL + "/manual",
			Options: exportclient.Options{FailOnResourceErrors: failOn}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Wait(ctx, job.TaskID, 0)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	missingDiagram := func(st exportclient.Status) bool {
		r := st.Result
		return r != nil && len(r.Warnings) == 1 && r.Warnings[0].Kind == "resource" && r.Warnings[0].Status == 404 &&
			strings.HasSuffix(r.Warnings[0].URL, "/diagrams/network.png")
	}
	first := export("1", false)
	if first.State != exportclient.StateCompleted || !first.Result.Rendered || !missingDiagram(first) {
		t.Fatalf("first export: %+v %+v", first, first.Result)
	}
	reuse := export("1", false)
	if reuse.State != exportclient.StateCompleted || reuse.Result.Rendered || !missingDiagram(reuse) {
		t.Fatalf("reuse: %+v %+v", reuse, reuse.Result)
	}
	strict := export("1", true)
	if strict.State != exportclient.StateFailed || !strings.Contains(strict.Error, "page errors (fail_on_resource_errors)") ||
		!strings.Contains(strict.Error, "/diagrams/network.png") || strict.Retried != 0 {
		t.Fatalf("reuse with fail_on_resource_errors: %+v", strict)
	}
	fresh := export("2", true)
	if fresh.State != exportclient.StateFailed || !strings.Contains(fresh.Error, "network.png answered 404") || fresh.Retried != 0 {
		t.Fatalf("first render with fail_on_resource_errors: %+v", fresh)
	}
	if entries, err := os.ReadDir(filepath.Join(store, "m", "2")); err == nil && len(entries) > 0 {
		t.Errorf("something was stored for the failed render: %v", entries)
	}
}
