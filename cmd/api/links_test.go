package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestBinaries_LinkOfANewVersionRendersOnce: 50 readers click the signed
// link of a version that is not stored at the same moment; bin/api and a
// real bin/worker (Chromium) render it once, every reader gets the PDF,
// and the next click is answered from storage.
func TestBinaries_LinkOfANewVersionRendersOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	redis := testsupport.StartRedis(t)
	var fetched atomic.Int64
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/print") {
			fetched.Add(1)
			time.Sleep(300 * time.Millisecond) // the clicks arrive while it renders
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, `<!doctype html><title>Ops</title><h1>Ops guide `+r.URL.Path+`</h1>`)
	}))
	t.Cleanup(page.Close)
	pageHost := strings.TrimPrefix(page.URL, "http://")
	dir := t.TempDir()
	manualsFile := filepath.Join(dir, "manuals.yaml")
	if err := os.WriteFile(manualsFile, []byte("manuals:\n  ops-guide: {url: \""+page.URL+"/ops/{version}/print\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(k)
	addr := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	common := []string{"REDIS_URL=" + redis.URL(), "STORAGE_URL=file://" + filepath.Join(dir, "artifacts"), "ALLOWED_HOSTS=" + pageHost, "LOG_FORMAT=text"}
	admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	worker, err := harness.Start("worker", "", filepath.Join(bin, "worker"), append(append(os.Environ(), common...),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ADMIN_ADDR="+admin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(worker.Kill)
	api, err := harness.Start("api", "", filepath.Join(bin, "api"), append(common, "API_ADDR="+addr, "MANUALS_FILE="+manualsFile, "LINK_SECRET="+secret))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Kill)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, u := range []string{"http://" + admin + "/readyz", "http://" + addr + "/healthz"} {
		if err := harness.WaitHTTP(ctx, u, nil); err != nil {
			t.Fatalf("%v\nworker:\n%s\napi:\n%s", err, worker.Output(), api.Output())
		}
	}
	link, err := exportclient.SignLink("http://"+addr, secret, exportclient.Link{ManualID: "ops-guide", Version: "2026.12"})
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([][]byte, 50)
	codes := make([]int, 50)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(link)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			codes[i] = resp.StatusCode
			bodies[i], _ = io.ReadAll(resp.Body)
		}()
	}
	wg.Wait()
	for i := range 50 {
		if codes[i] != http.StatusOK || !bytes.HasPrefix(bodies[i], []byte("%PDF-")) || !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("click %d: %d %.80q\napi:\n%s", i, codes[i], bodies[i], api.Output())
		}
	}
	if n := fetched.Load(); n != 1 {
		t.Errorf("the page was rendered %d times for 50 clicks, want 1", n)
	}
	if n := strings.Count(worker.Output(), "outcome=rendered"); n != 1 {
		t.Errorf("%d renders in the worker's log, want 1", n)
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || fetched.Load() != 1 {
		t.Errorf("the next click: %d, %d renders", resp.StatusCode, fetched.Load())
	}
}
