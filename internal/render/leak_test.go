package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestRender_NoLeaksOverManyRenders runs 150 small renders (30 with -short,
// or RENDER_LEAK_RENDERS: make chaos runs 1000),
// four at a time, of which every tenth never becomes ready and times out. The
// browser's process group must be back to its size before the run, and once
// the Renderer is closed no browser process and no extra goroutine is left.
func TestRender_NoLeaksOverManyRenders(t *testing.T) {
	// Serial (no t.Parallel): it counts the goroutines of the whole test
	// binary (main_test.go).
	// Every check below is absolute (no tab, context, process or goroutine
	// left), so a leak of each render shows at any count; make chaos runs
	// the long soak for what only many renders reach.
	total := 150
	if testing.Short() {
		total = 30
	}
	if v, err := strconv.Atoi(os.Getenv("RENDER_LEAK_RENDERS")); err == nil && v > 0 {
		total = v
	}
	baseGoroutines := runtime.NumGoroutine()
	r, err := New(Config{
		ChromiumPath:         testsupport.ChromiumPath(t),
		Concurrency:          4,
		Timeout:              20 * time.Second,
		MaxRendersPerBrowser: 10 * total, // one browser, so its process group can be compared
		Logger:               slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			r.Close()
		}
	}()
	ctx := context.Background()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sink := func(_ context.Context, pdf io.Reader) error { _, err := io.Copy(io.Discard, pdf); return err }
	if _, err := r.Render(ctx, Source{HTML: "<p>warm up</p>"}, settings(spec.Options{}), sink); err != nil {
		t.Fatal(err)
	}
	b := r.current()
	procsBefore := len(chromiumPIDs(b.pid, ""))
	t.Logf("browser process group before: %v", processTypes(b.pid))
	contextsBefore := browserContexts(t, b)

	started := time.Now()
	var next atomic.Int64
	var ok, timeouts atomic.Int64
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(total) {
					return
				}
				html := fmt.Sprintf("<!doctype html><h1>Render %d</h1><p>%s</p>", i, "small page")
				opts := spec.Options{}
				rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				if i%10 == 0 { // forced timeout: wait_for never true, short deadline
					opts.WaitFor = "window.__never__ === true"
					cancel()
					rctx, cancel = context.WithTimeout(ctx, 600*time.Millisecond)
				}
				_, err := r.Render(rctx, Source{HTML: html}, settings(opts), sink)
				cancel()
				switch {
				case i%10 == 0 && errors.Is(err, ErrTimeout):
					timeouts.Add(1)
				case i%10 != 0 && err == nil:
					ok.Add(1)
				default:
					mu.Lock()
					failures = append(failures, fmt.Sprintf("render %d: %v", i, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(started)
	t.Logf("%d renders (%d ok, %d timed out as forced) in %v: %.1f renders/s; %d tabs at most at once",
		total, ok.Load(), timeouts.Load(), took.Round(time.Millisecond), float64(total)/took.Seconds(), r.maxTabs.Load())
	if len(failures) > 0 {
		t.Errorf("%d unexpected outcomes, first: %v", len(failures), failures[:min(5, len(failures))])
	}
	if got := r.tabs.Load(); got != 0 {
		t.Errorf("%d tabs still counted open", got)
	}
	if r.current() != b {
		t.Fatalf("the browser was replaced during the run (crash?)")
	}
	// Renderer processes of closed tabs exit shortly after; give them time.
	// Chromium may keep one spare renderer process warm for the next tab;
	// it belongs to no render. Leaked tabs and contexts are checked below.
	var procsAfter int
	testsupport.Eventually(t, 15*time.Second, func() error {
		procsAfter = len(chromiumPIDs(b.pid, ""))
		return testsupport.Unless(procsAfter <= procsBefore+1, "browser process group grew from %d to %d processes: %v", procsBefore, procsAfter, processTypes(b.pid))
	})
	t.Logf("browser process group: %d processes before, %d after: %v", procsBefore, procsAfter, processTypes(b.pid))
	if n, err := r.pageTargets(ctx); err != nil || n > 2 {
		t.Errorf("Chromium lists %d page targets (%v), want only its first tab and the spare (spare.go)", n, err)
	}
	if n := browserContexts(t, b); n != contextsBefore {
		t.Errorf("Chromium lists %d browser contexts, %d before the run", n, contextsBefore)
	}

	r.Close()
	closed = true
	if pids := chromiumPIDs(b.pid, b.dataDir); len(pids) != 0 {
		t.Errorf("browser processes left after Close: %v", pids)
	}
	const slack = 2
	settled := testsupport.Within(10*time.Second, func() error {
		return testsupport.Unless(runtime.NumGoroutine() <= baseGoroutines+slack, "goroutines left")
	})
	if n := runtime.NumGoroutine(); settled != nil {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, baseGoroutines, buf[:runtime.Stack(buf, true)])
	} else {
		t.Logf("goroutines: %d before, %d after Close", baseGoroutines, n)
	}
}

func browserContexts(t *testing.T, b *browser) int {
	t.Helper()
	res, err := cdp.Call(context.Background(), b.session(), target.GetBrowserContexts, cdp.Empty{})
	if err != nil {
		t.Fatalf("Target.getBrowserContexts: %v", err)
	}
	return len(res.BrowserContextIDs)
}

// processTypes counts the processes of a browser's group by their --type.
func processTypes(pgid int) map[string]int {
	types := map[string]int{}
	for _, pid := range chromiumPIDs(pgid, "") {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		typ := "browser"
		for _, arg := range strings.Fields(strings.ReplaceAll(string(cmdline), "\x00", " ")) { // Chromium rewrites its argv space-separated
			if v, ok := strings.CutPrefix(arg, "--type="); ok {
				typ = v
			}
			if v, ok := strings.CutPrefix(arg, "--utility-sub-type="); ok {
				typ += ":" + v
			}
		}
		types[typ]++
	}
	return types
}
