package main

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// allInOne is a running allinone with the real worker and api beside it.
type allInOne struct {
	proc *harness.Proc
	base string
}

// startAllInOne builds allinone beside the worker and api binaries and
// runs it with env added to a minimal environment.
func startAllInOne(t *testing.T, env ...string) *allInOne {
	t.Helper()
	bins := testsupport.Binaries(t)
	bin := filepath.Join(t.TempDir(), "allinone")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	port := testsupport.FreePort(t)
	base := env
	env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"PDFEXPORT_BIN_DIR=" + bins, "CHROMIUM_PATH=" + testsupport.ChromiumPath(t),
		"API_ADDR=127.0.0.1:" + strconv.Itoa(port), "ADMIN_ADDR=127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t)),
		"STORAGE_URL=file://" + t.TempDir(), "LOG_FORMAT=text"}, base...)
	p, err := harness.Start("allinone", "", bin, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.Exited() {
			p.Kill()
		}
	})
	a := &allInOne{proc: p, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	testsupport.Eventually(t, 60*time.Second, func() error {
		if p.Exited() {
			t.Fatalf("allinone exited: %v\n%s", p.Err(), p.Tail(4000))
		}
		resp, err := http.Get(a.base + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return testsupport.Unless(resp.StatusCode == 200, "health %d", resp.StatusCode)
	})
	return a
}

// convert posts one HTML page to Gotenberg's route and returns the PDF.
func (a *allInOne) convert(t *testing.T, html string) []byte {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("files", "index.html")
	_, _ = io.WriteString(fw, html)
	_ = mw.Close()
	resp, err := http.Post(a.base+"/forms/chromium/convert/html", mw.FormDataContentType(), &body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pdf, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		t.Fatalf("convert: %d %q\n%s", resp.StatusCode, pdf[:min(len(pdf), 300)], a.proc.Tail(4000))
	}
	return pdf
}

// children are the pids of the processes allinone started.
func (a *allInOne) children(t *testing.T) []int {
	t.Helper()
	var pids []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", a.proc.PID()))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(s)
			pids = append(pids, pid)
		}
	}
	return pids
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

var privateRedis = regexp.MustCompile(`private redis-server on redis://(127\.0\.0\.1:\d+)/0`)

func TestAllInOne_ServesOnItsOwnRedisAndStopsEverything(t *testing.T) {
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "pdfexport-redis-*"))
	a := startAllInOne(t)
	if !strings.Contains(string(a.convert(t, `<p>all in one</p>`)), "%%EOF") {
		t.Fatal("the PDF has no end marker")
	}
	m := privateRedis.FindStringSubmatch(a.proc.Output())
	if m == nil {
		t.Fatalf("no private redis-server announced:\n%s", a.proc.Tail(4000))
	}
	kids := a.children(t)
	if len(kids) != 3 {
		t.Fatalf("allinone runs %d children %v, want redis, worker and api", len(kids), kids)
	}
	if err := a.proc.Stop(2 * time.Minute); err != nil {
		t.Fatalf("stop: %v\n%s", err, a.proc.Tail(4000))
	}
	for _, pid := range kids {
		if alive(pid) {
			t.Errorf("child %d outlived allinone", pid)
		}
	}
	if resp, err := http.Get(a.base + "/health"); err == nil {
		resp.Body.Close()
		t.Error("bin/api still answers after the stop")
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "pdfexport-redis-*"))
	for _, d := range after {
		if !slices.Contains(before, d) {
			t.Errorf("redis-server's folder %s left behind", d)
		}
	}
}

func TestAllInOne_UsesTheSharedRedis(t *testing.T) {
	r := testsupport.StartRedis(t)
	a := startAllInOne(t, "REDIS_URL="+r.URL())
	a.convert(t, `<p>shared redis</p>`)
	if privateRedis.MatchString(a.proc.Output()) {
		t.Fatal("a private redis-server was started though REDIS_URL is set")
	}
	keys, err := r.Client().Keys(t.Context(), "asynq:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("the shared Redis holds no queue (keys %v, err %v)", keys, err)
	}
	if n := len(a.children(t)); n != 2 {
		t.Fatalf("allinone runs %d children, want the worker and api only", n)
	}
}

func TestAllInOne_AChildThatDiesStopsTheRest(t *testing.T) {
	r := testsupport.StartRedis(t)
	a := startAllInOne(t, "REDIS_URL="+r.URL())
	kids := a.children(t)
	if len(kids) != 2 {
		t.Fatalf("children %v, want 2", kids)
	}
	_ = syscall.Kill(kids[0], syscall.SIGKILL)
	select {
	case <-a.proc.Done():
	case <-time.After(2 * time.Minute):
		t.Fatalf("allinone still runs after its child %d died\n%s", kids[0], a.proc.Tail(4000))
	}
	if code := a.proc.ExitCode(); code != exitFailure {
		t.Fatalf("exit code %d, want %d\n%s", code, exitFailure, a.proc.Tail(4000))
	}
	if alive(kids[1]) {
		t.Errorf("the other child %d outlived allinone", kids[1])
	}
	if !strings.Contains(a.proc.Output(), "exited") {
		t.Errorf("allinone did not say which child exited:\n%s", a.proc.Tail(2000))
	}
}

func TestFindBinaries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"worker", "api"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		env     []string
		wantErr string
		redis   bool
	}{
		{"binaries in the folder, redis-server in PATH", []string{"PDFEXPORT_BIN_DIR=" + dir, "PATH=" + os.Getenv("PATH")}, "", true},
		{"a shared Redis needs no redis-server", []string{"PDFEXPORT_BIN_DIR=" + dir, "PATH=" + dir, "REDIS_URL=redis://r:6379/0"}, "", false},
		{"Cluster is shared too", []string{"PDFEXPORT_BIN_DIR=" + dir, "PATH=" + dir, "REDIS_CLUSTER_ADDRS=a:1"}, "", false},
		{"no redis-server and no Redis", []string{"PDFEXPORT_BIN_DIR=" + dir, "PATH=" + dir}, "no REDIS_URL is set and no redis-server", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", lookup(tt.env, "PATH"))
			b, err := findBinaries(tt.env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.worker != filepath.Join(dir, "worker") || b.api != filepath.Join(dir, "api") {
				t.Errorf("binaries %+v, want those of %s", b, dir)
			}
			if (b.redis != "") != tt.redis {
				t.Errorf("redis-server %q, want one: %v", b.redis, tt.redis)
			}
		})
	}
}

func TestWorkerEnv(t *testing.T) {
	for _, tt := range []struct {
		name   string
		env    []string
		hosts  bool // the worker gets CALLBACK_ALLOWED_HOSTS
		secret string
	}{
		{"webhook hosts without a secret are bin/api's", []string{"A=1", "CALLBACK_ALLOWED_HOSTS=hooks.example.com"}, false, ""},
		{"with a secret the worker signs callbacks too", []string{"CALLBACK_ALLOWED_HOSTS=hooks.example.com", "CALLBACK_SECRET=whsec_x"}, true, "whsec_x"},
		{"no callback hosts", []string{"A=1"}, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := workerEnv(tt.env)
			if (lookup(got, "CALLBACK_ALLOWED_HOSTS") != "") != tt.hosts || lookup(got, "CALLBACK_SECRET") != tt.secret {
				t.Errorf("worker env %v", got)
			}
			if len(tt.env) > 0 && lookup(tt.env, "A") != lookup(got, "A") {
				t.Errorf("worker env %v lost the rest of %v", got, tt.env)
			}
		})
	}
}
