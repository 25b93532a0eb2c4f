package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// planter is another local user sharing the worker's TMPDIR: it watches
// the directory and, for every entry that appears, plants "<entry>.out"
// (the name today's post-processing derives from its spool) as a symlink
// to a victim file or as a plain file it can read. It only ever touches
// names directly in TMPDIR: another user cannot list, let alone write
// into, a directory of the worker's that is 0700 (the test runs as the
// worker's user, so it has to keep to that rule itself).
type planter struct {
	dir, victim string
	symlink     bool

	mu      sync.Mutex
	planted []string
	open    []*os.File // the plain files, held open: unlinking them does not take back what was written
}

func (p *planter) run(ctx context.Context) {
	seen := map[string]bool{}
	for ctx.Err() == nil {
		entries, _ := os.ReadDir(p.dir)
		for _, e := range entries {
			name := e.Name()
			if seen[name] || strings.HasSuffix(name, ".out") {
				continue
			}
			seen[name] = true
			target := filepath.Join(p.dir, name+".out")
			var f *os.File
			var err error
			if p.symlink {
				err = os.Symlink(p.victim, target)
			} else {
				f, err = os.OpenFile(target, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
			}
			if err == nil {
				p.mu.Lock()
				p.planted = append(p.planted, target)
				if f != nil {
					p.open = append(p.open, f)
				}
				p.mu.Unlock()
			}
		}
		time.Sleep(time.Millisecond) // a watcher polls; the spool lives for the whole render and post-processing
	}
}

// received is how many bytes each planted plain file received (by name),
// read through the planter's own open file.
func (p *planter) received() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := map[string]int64{}
	for _, f := range p.open {
		if fi, err := f.Stat(); err == nil {
			n[f.Name()] = fi.Size()
		}
	}
	return n
}

func (p *planter) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.open {
		_ = f.Close()
	}
}

func (p *planter) files() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.planted...)
}

// TestBinaries_SharedTMPDIRPlantsReachNothing: a local user who plants
// files at the names the worker will use in a shared TMPDIR reaches
// nothing, whether a symlink to a file of the worker's user (which
// post-processing would overwrite with the PDF) or a plain file of its own
// (which would receive the unencrypted PDF). The export completes with its
// watermark; the victim keeps its bytes; planted files stay empty. The
// worker's temp files live in one 0700 directory of its own, which it
// removes when it stops.
func TestBinaries_SharedTMPDIRPlantsReachNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	for _, tc := range []struct {
		name    string
		symlink bool
	}{
		{"symlink to a victim file", true},
		{"plain file the planter reads", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testsupport.StartRedis(t)
			dir := t.TempDir()
			tmp := filepath.Join(dir, "tmp")
			if err := os.Mkdir(tmp, 0o777); err != nil {
				t.Fatal(err)
			}
			const precious = "the victim's own bytes\n"
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte(precious), 0o600); err != nil {
				t.Fatal(err)
			}
			htmlFile := filepath.Join(dir, "manual.html")
			if err := os.WriteFile(htmlFile, []byte(`<!doctype html><h1>One</h1><h1 style="break-before:page">Two</h1>`), 0o644); err != nil {
				t.Fatal(err)
			}
			environ := append(os.Environ(), "TMPDIR="+tmp, "REDIS_URL="+srv.URL(), "STORAGE_URL=file://"+filepath.Join(dir, "artifacts"),
				"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=20ms")

			p := &planter{dir: tmp, victim: victim, symlink: tc.symlink}
			ctx, stopPlanter := context.WithCancel(context.Background())
			planted := make(chan struct{})
			go func() { defer close(planted); p.run(ctx) }()
			t.Cleanup(func() { stopPlanter(); <-planted; p.close() })

			w := startWorker(t, bin, environ)

			enq := exec.Command(filepath.Join(bin, "enqueue"), "export", "--manual", "planted", "--version", "1",
				"--html-file", htmlFile, "--watermark", "CONFIDENTIAL", "--title", "Planted", "--wait=60s", "--json")
			enq.Env = environ
			var stderr bytes.Buffer
			enq.Stderr = &stderr
			out, err := enq.Output()
			if err != nil {
				t.Fatalf("enqueue export: %v: %s\nworker log:\n%s", err, stderr.String(), w.Output())
			}
			var res spec.Result
			if err := json.Unmarshal(out, &res); err != nil || !res.Rendered || res.Pages != 2 {
				t.Fatalf("result %s: %v", out, err)
			}
			stopPlanter()
			<-planted

			if b, err := os.ReadFile(victim); err != nil || string(b) != precious {
				t.Errorf("the victim file now holds %d bytes starting %.8q (%v); want its own bytes untouched", len(b), b, err)
			}
			for f, n := range p.received() {
				if n != 0 {
					t.Errorf("planted file %s received %d bytes; want none", f, n)
				}
			}
			if len(p.files()) == 0 {
				t.Fatal("the planter planted nothing: the test proves nothing")
			}
			private := privateDirs(t, tmp)
			if len(private) != 1 {
				t.Errorf("TMPDIR holds %d private worker directories, want 1: %v", len(private), private)
			}
			for _, d := range private {
				if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("the worker's private directory %s: %v, %v; want mode 0700", d, fi.Mode(), err)
				}
			}
			if others := tmpEntries(t, tmp); len(others) != len(private) {
				t.Errorf("TMPDIR holds %v besides the planted files; want only the worker's private directory (Chromium's included)", others)
			}
			w.stop(t)
			if left := privateDirs(t, tmp); len(left) != 0 {
				t.Errorf("private directories left after a clean stop: %v", left)
			}
		})
	}
}

// privateDirs are the worker directories in tmp.
func privateDirs(t *testing.T, tmp string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(tmp, "pdfexport-worker-*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// TestBinaries_AKilledWorkersPrivateDirectoryIsSwept: the private
// directory of a worker killed with SIGKILL (no cleanup ran) is removed by
// the next worker that starts on the same TMPDIR, in the background; a
// running worker's directory is left alone.
func TestBinaries_AKilledWorkersPrivateDirectoryIsSwept(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	srv := testsupport.StartRedis(t)
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	environ := append(os.Environ(), "TMPDIR="+tmp, "REDIS_URL="+srv.URL(), "STORAGE_URL=file://"+filepath.Join(dir, "artifacts"),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "LOG_FORMAT=text", "TASK_CHECK_INTERVAL=20ms")
	running := startWorker(t, bin, environ)
	killed := startWorker(t, bin, environ)
	dirs := privateDirs(t, tmp)
	if len(dirs) != 2 {
		t.Fatalf("private directories of two workers: %v", dirs)
	}
	killed.Kill()
	if left := privateDirs(t, tmp); len(left) != 2 {
		t.Fatalf("after SIGKILL: %v; want the killed worker's directory still there", left)
	}
	next := startWorker(t, bin, environ)
	of := func(w *workerProc) string { return fmt.Sprintf("%s/pdfexport-worker-%d-", tmp, w.PID()) }
	testsupport.Eventually(t, 20*time.Second, func() error {
		var got []string
		for _, d := range privateDirs(t, tmp) {
			for _, w := range []*workerProc{running, killed, next} {
				if strings.HasPrefix(d, of(w)) {
					got = append(got, w.Name+fmt.Sprint(w.PID()))
				}
			}
		}
		want := []string{running.Name + fmt.Sprint(running.PID()), next.Name + fmt.Sprint(next.PID())}
		if len(got) == 2 && got[0] != got[1] && slices.Contains(got, want[0]) && slices.Contains(got, want[1]) {
			return nil
		}
		return fmt.Errorf("private directories of %v; want exactly those of the running worker and the new one, %v (killed: %d)", got, want, killed.PID())
	})
	if others := tmpEntries(t, tmp); len(others) != 2 {
		t.Errorf("TMPDIR holds %v; want only the two private directories (the killed Chromium's files went with its worker's)", others)
	}
	for _, w := range []*workerProc{running, next} {
		w.stop(t)
	}
	if left := privateDirs(t, tmp); len(left) != 0 {
		t.Errorf("private directories left after clean stops: %v", left)
	}
}

// tmpEntries are the names in tmp, but for planted "*.out" files.
func tmpEntries(t *testing.T, tmp string) []string {
	t.Helper()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".out") {
			names = append(names, e.Name())
		}
	}
	return names
}
