package render

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// BenchmarkConcurrentRenders renders the Go specification from C closed-loop
// clients at once (CONCURRENT_CLIENTS, default 2: both lanes of the default
// RENDER_CONCURRENCY busy) in bursts of CONCURRENT_BURST renders (default
// 6), for the peer's bare tab on the headless shell and for the Renderer
// as configured. Each b.Loop iteration runs one burst of every system, the
// order rotating; figures are medians over the bursts of renders per
// second and of the CPU-seconds per render of the browser's whole process
// tree (reaped renderers included) and of this process (the Go side:
// chromedp, the peer's or the Renderer's). It shows what concurrency costs
// the Renderer against the peer, whose tabs share one context.
// CONCURRENT_GAP_MS (default 0) makes each client pause that long between
// its renders, as a worker does between tasks (its result, the finish, the
// next pick-up). Figures only.
func BenchmarkConcurrentRenders(b *testing.B) {
	shell, err := chromium.HeadlessShell()
	if err != nil {
		b.Fatal(err)
	}
	clients := envInt(b, "CONCURRENT_CLIENTS", 2)
	burst := envInt(b, "CONCURRENT_BURST", 6)
	gap := time.Duration(envInt(b, "CONCURRENT_GAP_MS", 0)) * time.Millisecond
	if clients < 1 || burst < 1 {
		b.Fatalf("CONCURRENT_CLIENTS=%d, CONCURRENT_BURST=%d: want at least 1 each", clients, burst)
	}
	html := goSpecDocument(b)
	s := settings(spec.Options{})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	type system struct {
		name string
		pid  int
		one  func(ctx context.Context) error
	}
	p, err := peer.Start(context.Background(), shell)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	params := PrintParams(s)
	systems := []system{{"bare-shell", p.PID(), func(ctx context.Context) error {
		_, err := p.Print(ctx, html, "", params, io.Discard)
		return err
	}}}
	r, err := New(Config{ChromiumPath: shell, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	systems = append(systems, system{"ours", r.current().pid, func(ctx context.Context) error {
		_, err := r.Render(ctx, Source{HTML: html}, s, discard)
		return err
	}})
	run := func(sys system, n int) (wall, browserCPU, goCPU float64, err error) {
		ctx := context.Background()
		c0, g0, t0 := cpuSeconds(sys.pid), selfCPU(), time.Now()
		var mu sync.Mutex
		next := 0
		errs := make([]error, clients)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				for {
					mu.Lock()
					if next == n {
						mu.Unlock()
						return
					}
					next++
					mu.Unlock()
					if err := sys.one(ctx); err != nil {
						errs[i] = err
						return
					}
					time.Sleep(gap)
				}
			})
		}
		wg.Wait()
		wall = time.Since(t0).Seconds()
		for _, e := range errs {
			if e != nil {
				return 0, 0, 0, fmt.Errorf("%s: %w", sys.name, e)
			}
		}
		return wall, cpuSeconds(sys.pid) - c0, selfCPU() - g0, nil
	}
	for _, sys := range systems { // warm up: every lane, and the spare
		if _, _, _, err := run(sys, clients); err != nil {
			b.Fatal(err)
		}
	}
	type figures struct{ rate, cpu, goCPU []float64 }
	got := map[string]*figures{}
	for _, sys := range systems {
		got[sys.name] = &figures{}
	}
	round := 0
	for b.Loop() {
		for k := range systems {
			sys := systems[(k+round)%len(systems)]
			time.Sleep(300 * time.Millisecond) // the last burst's renderers exit
			wall, cpu, goCPU, err := run(sys, burst)
			if err != nil {
				b.Fatal(err)
			}
			f := got[sys.name]
			f.rate = append(f.rate, float64(burst)/wall)
			f.cpu = append(f.cpu, cpu/float64(burst))
			f.goCPU = append(f.goCPU, goCPU/float64(burst))
		}
		round++
	}
	var out strings.Builder
	bare := got["bare-shell"]
	fmt.Fprintf(&out, "\ngospec, %d clients, bursts of %d, %v between a client's renders, %d bursts each: medians\n", clients, burst, gap, round)
	for _, sys := range systems {
		f := got[sys.name]
		fmt.Fprintf(&out, "| %s | %.2f renders/s (%.2f× bare) | browser %.3f CPU-s/render (%.2f× bare) | Go %.3f CPU-s/render |\n",
			sys.name, median(f.rate), median(f.rate)/median(bare.rate), median(f.cpu), median(f.cpu)/median(bare.cpu), median(f.goCPU))
		b.ReportMetric(median(f.rate), sys.name+"-renders/s")
		b.ReportMetric(median(f.cpu), sys.name+"-browser-cpu-s")
		b.ReportMetric(median(f.goCPU), sys.name+"-go-cpu-s")
	}
	fmt.Fprint(os.Stderr, out.String())
}

// envInt is the integer environment variable name, def when unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a whole number", name, v)
	}
	return n
}
