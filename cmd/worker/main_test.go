package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/config"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testsupport"
)

func TestRun_InvalidConfigExits2ListingEveryVariable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), nil, []string{"RENDER_CONCURRENCY=0", "LOCK_TTL=x", "STORAGE_URL=ftp://a"}, &stdout, &stderr)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d", code, exitUsage)
	}
	for _, v := range []string{"RENDER_CONCURRENCY", "LOCK_TTL", "STORAGE_URL"} {
		if !strings.Contains(stderr.String(), v) {
			t.Errorf("stderr does not name %s: %s", v, stderr.String())
		}
	}
}

func TestRun_HelpListsEveryVariable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, v := range config.Variables() {
		if !strings.Contains(stdout.String(), v.Name) {
			t.Errorf("--help misses %s", v.Name)
		}
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"--version"}, nil, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "worker") {
		t.Fatalf("--version: exit %d, %q", code, stdout.String())
	}
}

// buildBinaries compiles bin/worker and bin/enqueue into a temp dir once.
var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "pdfexport-bin-")
	if err != nil {
		return "", err
	}
	for _, name := range []string{"worker", "enqueue"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/pdfexport/pdfexport/cmd/"+name).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", name, err, out)
		}
	}
	return dir, nil
})

// TestBinaries_TwoWorkersRenderOnceAndStopCleanly is the demo as a test: real
// binaries, a private Redis, two worker processes, concurrent
// `enqueue export --wait --json`, then SIGTERM.
func TestBinaries_TwoWorkersRenderOnceAndStopCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	srv := testsupport.StartRedis(t)
	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "manual.html")
	if err := os.WriteFile(htmlFile, []byte(`<!doctype html><h1>One</h1><h1 style="break-before:page">Two</h1>`), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := append(os.Environ(), "REDIS_URL="+srv.URL(), "STORAGE_URL=file://"+filepath.Join(dir, "artifacts"),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=20ms")
	var workers []*exec.Cmd
	var logs []*bytes.Buffer
	for range 2 {
		admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
		cmd := exec.Command(filepath.Join(bin, "worker"))
		cmd.Env = append(environ, "ADMIN_ADDR="+admin)
		var log bytes.Buffer
		cmd.Stderr, cmd.Stdout = &log, &log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		workers, logs = append(workers, cmd), append(logs, &log)
		waitReady(t, "http://"+admin+"/readyz")
	}

	const requests = 4
	results := make([]spec.Result, requests)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(filepath.Join(bin, "enqueue"), "export", "--manual", "demo", "--version", "1",
				"--html-file", htmlFile, "--wait=60s", "--json")
			cmd.Env = environ
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("enqueue export: %v: %s", err, stderr.String())
				return
			}
			dec := json.NewDecoder(bytes.NewReader(out))
			dec.DisallowUnknownFields() // exactly the result contract
			if err := dec.Decode(&results[i]); err != nil {
				t.Errorf("--json output %q: %v", out, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	rendered := 0
	for _, r := range results {
		if r.Rendered {
			rendered++
		}
		if r.Pages != 2 || r.Bytes == 0 || !strings.HasPrefix(r.URL, "file://") {
			t.Errorf("result %+v: want 2 pages and a file:// URL", r)
		}
	}
	if rendered != 1 {
		t.Fatalf("%d of %d exports rendered, want exactly 1", rendered, requests)
	}

	for _, w := range workers {
		_ = w.Process.Signal(syscall.SIGTERM)
	}
	for i, w := range workers {
		done := make(chan error, 1)
		go func() { done <- w.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("worker %d after SIGTERM: %v\n%s", i, err, logs[i])
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("worker %d did not stop within 30s of SIGTERM", i)
		}
	}
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 60s (last: %v)", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
