package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
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
		{"missing clients file", nil, []string{"API_CLIENTS_FILE=/nonexistent/clients.yaml"}, "API_CLIENTS_FILE"},
		{"no long-polls", nil, []string{"API_MAX_WAITERS=0"}, "API_MAX_WAITERS"},
		{"bad link secret", nil, []string{"LINK_SECRET=whsec_c2hvcnQ="}, "LINK_SECRET"},
		{"link wait too long", nil, []string{"LINK_WAIT=5m"}, "LINK_WAIT"},
		{"missing manuals file", nil, []string{"MANUALS_FILE=/nonexistent/manuals.yaml"}, "MANUALS_FILE"},
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
	done, err := harness.StartTied(cmd)
	if err != nil {
		t.Fatal(err)
	}
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

// TestBinary_ClientsFile: bin/api with API_CLIENTS_FILE answers each
// client's export to that client only (404 to the other), refuses a queue
// outside a client's set (403), reloads a rotated token on SIGHUP, and logs
// the client's name, never its token.
func TestBinary_ClientsFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	redis := testsupport.StartRedis(t)
	dir := t.TempDir()
	const portal, wiki, rotated = "SECRET-portal-0123456789", "SECRET-wiki-0123456789ab", "SECRET-wiki-rotated-98765"
	wikiFile := filepath.Join(dir, "wiki")
	clients := filepath.Join(dir, "clients.yaml")
	for p, c := range map[string]string{wikiFile: wiki, clients: "clients:\n  - {name: portal, token: env:PORTAL_TOKEN}\n  - {name: wiki, token: 'file:" + wikiFile + "', queues: [batch]}\n"} {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	cmd := exec.Command(filepath.Join(testsupport.Binaries(t), "api"))
	cmd.Env = []string{"REDIS_URL=" + redis.URL(), "API_ADDR=" + addr, "API_CLIENTS_FILE=" + clients, "PORTAL_TOKEN=" + portal,
		"STORAGE_URL=file://" + t.TempDir(), "LOG_FORMAT=text"}
	var logs harness.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	exited, err := harness.StartTied(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := harness.WaitHTTP(ctx, "http://"+addr+"/healthz", nil); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	call := func(method, path, token string) (int, map[string]any) {
		t.Helper()
		var body *strings.Reader
		if method == "POST" {
			body = strings.NewReader(`{"v":1,"manual_id":"m","version":"1","source":{"html":"<p>x"}}`)
		} else {
			body = strings.NewReader("")
		}
		req, _ := http.NewRequest(method, "http://"+addr+path, body)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, created := call("POST", "/v1/exports", portal)
	if code != http.StatusAccepted {
		t.Fatalf("portal POST: %d %v\n%s", code, created, logs.String())
	}
	id, _ := created["task_id"].(string)
	if code, body := call("GET", "/v1/exports/"+id, portal); code != http.StatusOK {
		t.Errorf("portal GET of its export: %d %v", code, body)
	}
	if code, body := call("GET", "/v1/exports/"+id, wiki); code != http.StatusNotFound {
		t.Errorf("wiki GET of portal's export: %d %v, want 404", code, body)
	}
	if code, body := call("POST", "/v1/exports?queue=default", wiki); code != http.StatusForbidden {
		t.Errorf("wiki POST to default: %d %v, want 403", code, body)
	}

	if err := os.WriteFile(wikiFile, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGHUP)
	testsupport.Eventually(t, 10*time.Second, func() error {
		code, _ := call("GET", "/v1/exports/"+id, rotated)
		return testsupport.Unless(code == http.StatusNotFound, "the rotated wiki token: %d, want 404 (authenticated)", code)
	})
	if code, _ := call("GET", "/v1/exports/"+id, wiki); code != http.StatusUnauthorized {
		t.Errorf("the old wiki token after SIGHUP: %d, want 401", code)
	}
	out := logs.String()
	if !strings.Contains(out, "client=portal") || !strings.Contains(out, "API clients reloaded") {
		t.Errorf("the logs lack the client's name or the reload:\n%s", out)
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("the logs show a token:\n%s", out)
	}
}
