package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/harness"
	"github.com/pdfexport/pdfexport/internal/testsupport"
)

func TestRun_UsageErrorsExit2(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		want    string
	}{
		{"argument", []string{"serve"}, nil, `unexpected argument "serve"`},
		{"bad variable", nil, []string{"LOCK_TTL=x"}, "LOCK_TTL"},
		{"address in use", nil, []string{"API_ADDR=" + taken.Addr().String()}, "API_ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tc.args, tc.environ, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d naming %q", code, stderr.String(), exitUsage, tc.want)
			}
		})
	}
}

// TestBinary_ServesTheAPIAndStopsOnSIGTERM: bin/api on API_ADDR enqueues an
// export with the bearer token, reports it pending, and exits 0 on SIGTERM.
func TestBinary_ServesTheAPIAndStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	redis := testsupport.StartRedis(t)
	addr := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	cmd := exec.Command(filepath.Join(testsupport.Binaries(t), "api"))
	cmd.Env = []string{"REDIS_URL=" + redis.URL(), "API_ADDR=" + addr, "API_TOKEN=t0k", "STORAGE_URL=file://" + t.TempDir(), "ALLOWED_HOSTS=docs.example.com", "LOG_FORMAT=text"}
	var logs harness.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := harness.WaitHTTP(ctx, "http://"+addr+"/healthz", nil); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/exports", strings.NewReader(`{"v":1,"manual_id":"m","version":"1","source":{"url":"https://docs.example.com/p"}}`))
	req.Header.Set("Authorization", "Bearer t0k")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		TaskID string `json:"task_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || created.TaskID == "" {
		t.Fatalf("POST: %d %+v", resp.StatusCode, created)
	}
	req, _ = http.NewRequest("GET", "http://"+addr+"/v1/exports/"+created.TaskID, nil)
	req.Header.Set("Authorization", "Bearer t0k")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ State string }
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || st.State != "pending" {
		t.Fatalf("GET: %d %+v", resp.StatusCode, st)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("bin/api did not stop on SIGTERM")
	}
}
