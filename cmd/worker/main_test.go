package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
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

// TestRun_MalformedCallbackSecretExits2: a CALLBACK_SECRET entry that is
// not whsec_<base64 key> stops the worker before it starts, naming the
// variable and never its value.
func TestRun_MalformedCallbackSecretExits2(t *testing.T) {
	const value = "plain-old-hmac-secret-0123456789"
	for _, secret := range []string{value, "whsec_c2l4dGVlbi1ieXRlcy1rZXk= " + value, "whsec_" + value + "!"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), nil, []string{"CALLBACK_ALLOWED_HOSTS=hooks.example.com", "CALLBACK_SECRET=" + secret}, &stdout, &stderr)
		if code != exitUsage {
			t.Fatalf("%q: exit %d, want %d\n%s", secret, code, exitUsage, stderr.String())
		}
		if !strings.Contains(stderr.String(), "CALLBACK_SECRET") || strings.Contains(stderr.String()+stdout.String(), value) {
			t.Errorf("%q: the message must name CALLBACK_SECRET, never its value:\n%s", secret, stderr.String())
		}
	}
}

// TestRun_HelpListsTheWorkersVariables: --help lists every variable the
// worker reads, and none it does not (MAX_RETRY is the enqueuers').
func TestRun_HelpListsTheWorkersVariables(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(line, "  ") {
			listed[f[0]] = true
		}
	}
	for _, v := range config.Variables() {
		if reads := slices.Contains(v.Binaries, "worker"); reads != listed[v.Name] {
			t.Errorf("--help lists %s: %v; the worker reads it: %v", v.Name, listed[v.Name], reads)
		}
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"--version"}, nil, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "worker") {
		t.Fatalf("--version: exit %d, %q", code, stdout.String())
	}
}

// TestBinaries_TwoWorkersRenderOnceAndStopCleanly is the demo as a test: real
// binaries, a private Redis, two worker processes, concurrent
// `enqueue export --wait --json`, then SIGTERM.
func TestBinaries_TwoWorkersRenderOnceAndStopCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	srv := testsupport.StartRedis(t)
	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "manual.html")
	if err := os.WriteFile(htmlFile, []byte(`<!doctype html><h1>One</h1><h1 style="break-before:page">Two</h1>`), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := append(os.Environ(), "REDIS_URL="+srv.URL(), "STORAGE_URL=file://"+filepath.Join(dir, "artifacts"),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=20ms")
	var workers []*workerProc
	for range 2 {
		workers = append(workers, startWorker(t, bin, environ))
	}

	results := exportConcurrently(t, bin, environ, 4, "--manual", "demo", "--version", "1", "--html-file", htmlFile)
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
		t.Fatalf("%d of %d exports rendered, want exactly 1", rendered, len(results))
	}

	for _, w := range workers {
		w.stop(t)
	}
}

// exportConcurrently runs n `enqueue export ARGS --wait=60s --json` at once
// and decodes each result strictly (exactly the result contract).
func exportConcurrently(t *testing.T, bin string, environ []string, n int, args ...string) []spec.Result {
	t.Helper()
	results := make([]spec.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(filepath.Join(bin, "enqueue"), append(append([]string{"export"}, args...), "--wait=60s", "--json")...)
			cmd.Env = environ
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("enqueue export: %v: %s", err, stderr.String())
				return
			}
			dec := json.NewDecoder(bytes.NewReader(out))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&results[i]); err != nil {
				t.Errorf("--json output %q: %v", out, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return results
}

// workerProc is one bin/worker process of a test.
type workerProc struct{ *harness.Proc }

func startWorker(t *testing.T, bin string, environ []string) *workerProc {
	t.Helper()
	return startWorkerOn(t, bin, environ, "127.0.0.1:"+strconv.Itoa(testsupport.FreePort(t)))
}

// startWorkerOn starts a worker whose admin listens on admin.
func startWorkerOn(t *testing.T, bin string, environ []string, admin string) *workerProc {
	t.Helper()
	p, err := harness.Start("worker", "", filepath.Join(bin, "worker"), append(environ, "ADMIN_ADDR="+admin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	w := &workerProc{p}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := harness.WaitHTTP(ctx, "http://"+admin+"/readyz", nil); err != nil {
		t.Fatalf("worker not ready: %v\n%s", err, w.Output())
	}
	return w
}

// stop sends SIGTERM and requires a clean exit within 45 s.
func (w *workerProc) stop(t *testing.T) {
	t.Helper()
	if err := w.Stop(45 * time.Second); err != nil {
		t.Fatalf("worker after SIGTERM: %v\n%s", err, w.Output())
	}
}

// TestBinaries_SIGTERMDuringRenderFinishesTheExport: a worker told to stop
// while it renders a slow page finishes that export, exits 0, and leaves no
// Chromium process behind.
func TestBinaries_SIGTERMDuringRenderFinishesTheExport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	srv := testsupport.StartRedis(t)
	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "slow.html")
	slow := `<!doctype html><h1>Slow</h1><script>setTimeout(() => { window.__PDF_READY__ = true }, 2500)</script>`
	if err := os.WriteFile(htmlFile, []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := append(os.Environ(), "REDIS_URL="+srv.URL(), "STORAGE_URL=file://"+filepath.Join(dir, "artifacts"),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=20ms", "SHUTDOWN_TIMEOUT=30s")
	w := startWorker(t, bin, environ)
	enq := exec.Command(filepath.Join(bin, "enqueue"), "export", "--manual", "slow", "--version", "1",
		"--html-file", htmlFile, "--wait-for", "window.__PDF_READY__===true", "--wait=60s", "--json")
	enq.Env = environ
	var out, errOut bytes.Buffer
	enq.Stdout, enq.Stderr = &out, &errOut
	if err := enq.Start(); err != nil {
		t.Fatal(err)
	}
	// The render has begun when a renderer process exists for the page.
	var chromium []int
	testsupport.Eventually(t, 20*time.Second, func() error {
		chromium = proctree.Descendants(w.PID())
		return testsupport.Unless(len(chromium) >= 3 && strings.Contains(w.Output(), "worker started"), "worker never started Chromium\n%s", w.Output())
	})
	time.Sleep(1200 * time.Millisecond) // the task is picked up and waits inside the 2.5 s wait_for
	chromium = proctree.Descendants(w.PID())
	w.stop(t)
	if err := enq.Wait(); err != nil {
		t.Fatalf("export interrupted by SIGTERM: %v: %s\nworker log:\n%s", err, errOut.String(), w.Output())
	}
	var res spec.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || !res.Rendered || res.Pages != 1 {
		t.Fatalf("result %s: %v", out.String(), err)
	}
	if log := w.Output(); !strings.Contains(log, "shutting down") || strings.Index(log, "shutting down") > strings.Index(log, "export done") {
		t.Fatalf("SIGTERM did not arrive during the render:\n%s", w.Output())
	}
	if left := proctree.Alive(chromium); len(left) > 0 {
		t.Fatalf("Chromium processes %v (of %v) left after the worker exited", left, chromium)
	}
}

// TestBinaries_RedisCluster: the worker and the CLI run on a 3-master Redis
// Cluster (REDIS_CLUSTER_ADDRS), and duplicates still render once.
func TestBinaries_RedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	cluster := testsupport.StartRedisCluster(t)
	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "m.html")
	if err := os.WriteFile(htmlFile, []byte(`<!doctype html><h1>Cluster</h1>`), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := append(os.Environ(), "REDIS_CLUSTER_ADDRS="+strings.Join(cluster.Addrs, ","), "STORAGE_URL=file://"+filepath.Join(dir, "artifacts"),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=20ms")
	workers := []*workerProc{startWorker(t, bin, environ), startWorker(t, bin, environ)}
	results := exportConcurrently(t, bin, environ, 3, "--manual", "c", "--version", "1", "--html-file", htmlFile)
	rendered := 0
	for _, r := range results {
		if r.Rendered {
			rendered++
		}
	}
	if rendered != 1 {
		t.Fatalf("%d renders on the cluster, want 1: %+v", rendered, results)
	}
	for _, w := range workers {
		w.stop(t)
	}
}

// TestBinaries_S3Storage: the worker stores into a real S3 server
// (versitygw) with STORAGE_URL=s3://bucket/prefix, and the result's URL is a
// presigned GET that downloads the PDF with plain net/http.
func TestBinaries_S3Storage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	srv := testsupport.StartRedis(t)
	s3 := testsupport.StartS3(t)
	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "m.html")
	if err := os.WriteFile(htmlFile, []byte(`<!doctype html><h1>S3</h1><h1 style="break-before:page">Two</h1>`), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := append(os.Environ(), "REDIS_URL="+srv.URL(), "STORAGE_URL=s3://manuals/pdf", "S3_ENDPOINT="+s3.Endpoint(),
		"S3_FORCE_PATH_STYLE=true", "S3_CREATE_BUCKET=true", "S3_REGION="+s3.Region,
		"AWS_ACCESS_KEY_ID="+s3.AccessKey, "AWS_SECRET_ACCESS_KEY="+s3.SecretKey,
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=20ms")
	w := startWorker(t, bin, environ)
	cmd := exec.Command(filepath.Join(bin, "enqueue"), "export", "--manual", "s3demo", "--version", "1", "--html-file", htmlFile, "--wait=60s", "--json")
	cmd.Env = environ
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("export: %v: %s\n%s", err, stderr.String(), w.Output())
	}
	var res spec.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Rendered || res.Pages != 2 || !strings.HasPrefix(res.ArtifactKey, "pdf/s3demo/1/") {
		t.Fatalf("result %+v: want rendered, 2 pages, key under the pdf/ prefix", res)
	}
	resp, err := http.Get(res.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("%PDF-")) || int64(len(body)) != res.Bytes {
		t.Fatalf("presigned download: %d, %d bytes (want %d), prefix %q", resp.StatusCode, len(body), res.Bytes, body[:min(len(body), 8)])
	}
	w.stop(t)
}

// TestBinaries_TLSAndACLRedis: bin/worker and bin/enqueue reach a TLS-only
// Redis with an ACL user (certificates generated here) and export; a worker
// given the wrong password exits 3 naming the server and the refusal, never
// the password.
func TestBinaries_TLSAndACLRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	pki := testsupport.NewTLSFiles(t)
	srv := testsupport.StartRedisTLS(t, pki)
	dir := t.TempDir()
	htmlFile := filepath.Join(dir, "manual.html")
	if err := os.WriteFile(htmlFile, []byte(`<!doctype html><h1>TLS</h1>`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := append(os.Environ(), "STORAGE_URL=file://"+filepath.Join(dir, "artifacts"), "CHROMIUM_PATH="+testsupport.ChromiumPath(t),
		"LOG_FORMAT=text", "REDIS_TLS_CA_FILE="+pki.CA, "REDIS_TLS_CERT_FILE="+pki.ClientCert, "REDIS_TLS_KEY_FILE="+pki.ClientKey)
	good := append(append([]string{}, base...), "REDIS_URL=rediss://"+srv.Addr()+"/0",
		"REDIS_USERNAME="+testsupport.ACLUser, "REDIS_PASSWORD="+testsupport.ACLPassword)
	w := startWorker(t, bin, good)
	results := exportConcurrently(t, bin, good, 2, "--manual", "tls", "--version", "1", "--html-file", htmlFile)
	if results[0].Pages != 1 || results[0].ArtifactKey != results[1].ArtifactKey {
		t.Errorf("results %+v", results)
	}
	w.stop(t)

	const wrong = "NOT-THE-PASSWORD-55"
	bad := append(append([]string{}, base...), "REDIS_URL=rediss://"+testsupport.ACLUser+":"+wrong+"@"+srv.Addr()+"/0",
		"ADMIN_ADDR=")
	cmd := exec.Command(filepath.Join(bin, "worker"))
	cmd.Env = bad
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUnavailable {
		t.Fatalf("worker with a wrong password: %v, want exit %d\n%s", err, exitUnavailable, out)
	}
	if s := string(out); !strings.Contains(s, srv.Addr()) || !strings.Contains(s, "WRONGPASS") || strings.Contains(s, wrong) {
		t.Errorf("the message must name %s and the refusal, never the password:\n%s", srv.Addr(), s)
	}
}

// TestBinaries_PagesCannotReachTheWorkersOwnPorts: even with the admin
// address listed exactly on ALLOWED_HOSTS, an inline document that frames
// the dashboard's list of completed exports (other callers' manual ids,
// callback URLs, results) or the metrics prints neither into its own PDF:
// the worker refuses its own endpoints whatever the allowlist says, and
// the result's warnings say the requests were blocked.
func TestBinaries_PagesCannotReachTheWorkersOwnPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	srv := testsupport.StartRedis(t)
	dir := t.TempDir()
	admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	environ := append(os.Environ(), "REDIS_URL="+srv.URL(), "STORAGE_URL=file://"+filepath.Join(dir, "artifacts"),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=20ms",
		"DASHBOARD=true", "ALLOWED_HOSTS=docs.example.com,"+admin)
	w := startWorkerOn(t, bin, environ, admin)

	// Another caller's export, which the dashboard lists once completed.
	const victim = "victim-manual-4711"
	victimFile := filepath.Join(dir, "victim.html")
	if err := os.WriteFile(victimFile, []byte(`<!doctype html><h1>Private</h1>`), 0o644); err != nil {
		t.Fatal(err)
	}
	exportConcurrently(t, bin, environ, 1, "--manual", victim, "--version", "1", "--html-file", victimFile)
	// The data is there for the taking: the dashboard lists the victim.
	testsupport.Eventually(t, 10*time.Second, func() error {
		resp, err := http.Get("http://" + admin + "/monitoring/api/queues/default/completed_tasks")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return testsupport.Unless(strings.Contains(string(body), victim), "the dashboard does not list %s yet: %s", victim, body)
	})

	for _, tc := range []struct{ name, path, secret string }{
		{"dashboard", "/monitoring/api/queues/default/completed_tasks", victim},
		{"metrics", "/metrics", "pdfexport_"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attack := filepath.Join(t.TempDir(), "attack.html")
			page := `<!doctype html><h1>Attack</h1><iframe style="width:100%;height:900px" src="http://` + admin + tc.path + `"></iframe>`
			if err := os.WriteFile(attack, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			res := exportConcurrently(t, bin, environ, 1, "--manual", "attack-"+tc.name, "--version", "1", "--html-file", attack)[0]
			pdf, err := os.ReadFile(strings.TrimPrefix(res.URL, "file://"))
			if err != nil {
				t.Fatal(err)
			}
			text := testsupport.PDFText(t, pdf)
			if !strings.Contains(text, "Attack") {
				t.Fatalf("the PDF misses the page's own text:\n%s", text)
			}
			// pdftotext breaks long lines anywhere: compare without spaces.
			if strings.Contains(strings.Join(strings.Fields(text), ""), tc.secret) {
				t.Fatalf("the PDF printed the worker's %s (%q found):\n%s", tc.path, tc.secret, text)
			}
			blocked := false
			for _, wn := range res.Warnings {
				blocked = blocked || wn.Kind == spec.WarningBlocked && strings.Contains(wn.URL, tc.path)
			}
			if !blocked {
				t.Errorf("no blocked warning for %s: %+v", tc.path, res.Warnings)
			}
		})
	}
	w.stop(t)
}
