package render

// The shared-browser rule of this package's tests.
//
// A Chromium start costs about a CPU-second (more under -race on a loaded
// machine), and most tests only need "a default Renderer that renders".
// Those call sharedRenderer and t.Parallel: one Renderer with the default
// Config, started on first use and closed by TestMain. A render already runs
// in a browser context of its own (the package's isolation promise, pinned by
// TestRender_RendersAreIsolated), so tests sharing the browser see none of
// each other's state.
//
// A test keeps a browser of its own (newRenderer) when it needs a Config or
// hook other than the default (an allowlist for its own server, limits,
// timeouts, an Observer), or inspects or disturbs the browser itself (kills
// it, recycles it, closes it, counts its tabs, targets or processes). Such
// a test may still run in parallel.
//
// A test stays serial (no t.Parallel) when it counts goroutines or
// processes of the whole test binary, changes process-wide state (the
// global tracer provider), or asserts real-time bounds a parallel
// neighbour's CPU could break. Go runs every serial test of a package before
// the paused parallel ones, and the shared Renderer starts only in a
// parallel test, so the serial tests see no other browser and no other
// Renderer's goroutines.
//
// The check that no Chromium child of the test binary outlives its Renderer
// (ourChromiums) runs per test while no other test Renderer is alive, and
// for the whole package in TestMain after the shared Renderer is closed.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := closeShared(); err != nil {
		fmt.Fprintf(os.Stderr, "closing the shared Renderer: %v\n", err)
		code = 1
	}
	// The package-wide form of newRenderer's check: parallel tests skip
	// the scan of direct children (other tests' browsers are children
	// too), so a browser one of them leaked is found here.
	if left := testsupport.Within(10*time.Second, func() error {
		return testsupport.Unless(len(chromiumChildren()) == 0, "chromium children left")
	}); left != nil {
		fmt.Fprintf(os.Stderr, "chromium processes of this test binary left after every Renderer closed: %v\n", chromiumChildren())
		code = 1
	}
	os.Exit(code)
}

// shared is the package's shared Renderer (see the rule above).
var shared struct {
	once sync.Once
	r    atomic.Pointer[Renderer] // set once started
	// dir is the shared Renderer's TempDir, so each of its browsers names it
	// in --user-data-dir: a leftover scan knows them by command line, also
	// while one starts or restarts and its pid is not in r.pids yet.
	dir    atomic.Pointer[string]
	err    error
	closed atomic.Bool // set by TestMain before its last check
}

// sharedRenderer returns the package's shared default Renderer, starting it
// on first use. The caller must be a parallel test (t.Parallel first), and
// must not change the Renderer's hooks or close it.
func sharedRenderer(t *testing.T) *Renderer {
	t.Helper()
	path := testsupport.ChromiumPath(t) // skips under -short
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "pdfexport-render-shared-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir.Store(&dir)
		r, err := New(Config{ChromiumPath: path, TempDir: dir, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			shared.err = err
			return
		}
		// Generous: the first parallel tests start their own browsers at
		// the same time on a loaded machine.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := r.Start(ctx); err != nil {
			r.Close()
			shared.err = fmt.Errorf("Start: %w", err)
			return
		}
		shared.r.Store(r)
	})
	if shared.err != nil {
		t.Fatalf("shared Renderer: %v", shared.err)
	}
	return shared.r.Load()
}

func closeShared() error {
	r := shared.r.Load()
	if r == nil {
		return nil
	}
	shared.closed.Store(true)
	err := r.Close()
	if pids := ourChromiums(r); len(pids) > 0 {
		err = fmt.Errorf("chromium processes left after Close: %v (close: %v)", pids, err)
	}
	if dir := shared.dir.Load(); dir != nil {
		err = errors.Join(err, os.RemoveAll(*dir))
	}
	return err
}

// live are the Renderers newRenderer made that are not closed yet.
var live struct {
	mu sync.Mutex
	rs map[*Renderer]bool
}

func register(r *Renderer) {
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.rs == nil {
		live.rs = map[*Renderer]bool{}
	}
	live.rs[r] = true
}

func unregister(r *Renderer) {
	live.mu.Lock()
	defer live.mu.Unlock()
	delete(live.rs, r)
}

// othersAlive reports whether a test Renderer other than r is open (the
// shared one is not counted: its browsers are known, see chromiumChildren).
func othersAlive(r *Renderer) bool {
	live.mu.Lock()
	defer live.mu.Unlock()
	for o := range live.rs {
		if o != r {
			return true
		}
	}
	return false
}

// chromiumChildren lists the live chromium processes that are direct
// children of this test process, other than the browsers of the shared
// Renderer until TestMain closes it.
func chromiumChildren() []string {
	sharedDir := ""
	if dir := shared.dir.Load(); dir != nil && !shared.closed.Load() {
		sharedDir = "--user-data-dir=" + *dir + string(os.PathSeparator)
	}
	var found []string
	self := os.Getpid()
	for _, p := range proctree.Live() {
		if p.PPID != self {
			continue
		}
		args := proctree.Cmdline(p.PID)
		if sharedDir != "" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, sharedDir) }) {
			continue
		}
		if cmd := strings.Join(args, " "); strings.Contains(cmd, "chrom") {
			found = append(found, fmt.Sprintf("%d %s", p.PID, cmd[:min(len(cmd), 120)]))
		}
	}
	return found
}
