package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// ── Section GO: Gotenberg's other routes on bin/api, against the real one ──
//
// The targets section G leaves: one caller's fresh conversion, a
// screenshot, and a split and a stamp of a long PDF, each the same request
// to bin/api (one bin/worker behind it) and to the real Gotenberg, with
// wall time, the CPU-seconds of each system's process trees and their peak
// resident memory.

const (
	gopsSamples  = 5   // fresh conversions and screenshots per system
	gopsEngineN  = 3   // splits and stamps per system
	gopsPages    = 500 // pages of the split and stamped PDF
	gopsRSSEvery = 10 * time.Millisecond
)

// gopsFigure is one operation's figures on one system.
type gopsFigure struct {
	wallMS  []float64 // per request
	cpu     float64   // CPU-seconds of the system's trees over all requests
	peakRSS int64     // bytes: the most the trees held at once
	baseRSS int64     // bytes: what they held before the requests
	rootRSS []int64   // bytes before the requests, per tree (the system's pids)
}

// grownRSS is how much more the trees held at their peak than before.
func (f gopsFigure) grownRSS() int64 { return f.peakRSS - f.baseRSS }

func (f gopsFigure) cpuPer() float64 { return f.cpu / float64(max(len(f.wallMS), 1)) }

// gopsOp is one measured operation.
type gopsOp struct {
	key, what string
	n         int
	one       func(ctx context.Context, s compatSystem, i int) error
}

type gopsResult struct {
	systems []string
	ops     []gopsOp
	figs    map[string][]gopsFigure // op key → per system
}

func scenarioGotenbergOps(ctx context.Context, e *benchEnv, rep *report) error {
	g, err := gotenbergFromFlags(ctx)
	if err != nil {
		return err
	}
	ours, stop, err := startCompatAPI(ctx, e, "gops")
	if err != nil {
		return err
	}
	defer stop()
	systems := []compatSystem{ours}
	if g != nil {
		systems = append(systems, compatSystem{name: sysGotenberg + " " + g.version, g: g, pids: []int{g.pid}})
	}
	long := filepath.Join(e.work, "long.pdf")
	if err := os.WriteFile(long, testsupport.NumberedPDF(gopsPages), 0o644); err != nil {
		return err
	}
	fields := gotenbergPrintFields(spec.Options{})
	tag := freshVersion("go")
	doc := func(s compatSystem, op string, i int) string {
		return e.manual + "<!-- " + tag + " " + op + " " + strconv.Itoa(i) + " " + s.name + " -->"
	}
	pdf := []formFile{{name: "long.pdf", path: long}}
	ops := []gopsOp{
		{"fresh", "one caller's fresh HTML conversion (standard document)", gopsSamples, func(ctx context.Context, s compatSystem, i int) error {
			_, err := s.g.convertHTML(ctx, doc(s, "fresh", i), fields, io.Discard)
			return err
		}},
		{"screenshot", "screenshot of fresh HTML (/forms/chromium/screenshot/html)", gopsSamples, func(ctx context.Context, s compatSystem, i int) error {
			_, err := s.g.post(ctx, "/forms/chromium/screenshot/html", nil, []formFile{{name: "index.html", data: []byte(doc(s, "shot", i))}}, io.Discard)
			return err
		}},
		{"split", fmt.Sprintf("split of a %d-page PDF into %d-page parts (zip)", gopsPages, gopsPages/10), gopsEngineN, func(ctx context.Context, s compatSystem, _ int) error {
			_, err := s.g.post(ctx, "/forms/pdfengines/split", map[string]string{"splitMode": "intervals", "splitSpan": strconv.Itoa(gopsPages / 10)}, pdf, io.Discard)
			return err
		}},
		{"stamp", fmt.Sprintf("text stamp on every page of a %d-page PDF", gopsPages), gopsEngineN, func(ctx context.Context, s compatSystem, _ int) error {
			_, err := s.g.post(ctx, "/forms/pdfengines/stamp", map[string]string{"stampSource": "text", "stampExpression": "CONFIDENTIAL"}, pdf, io.Discard)
			return err
		}},
	}
	res := &gopsResult{ops: ops, figs: map[string][]gopsFigure{}}
	for _, s := range systems {
		res.systems = append(res.systems, s.name)
		// Warm-up, not counted: a cold renderer on either side.
		if _, err := s.g.convertHTML(ctx, doc(s, "warm", 0), fields, io.Discard); err != nil {
			return fmt.Errorf("%s warm-up: %w", s.name, err)
		}
		if g != nil && s.g == g {
			g.observeChromium()
		}
		logf("   %s RSS by process before the operations: %s", s.name, rssBreakdown(s.pids))
		for _, op := range ops {
			fig, err := measureGopsOp(ctx, s, op)
			if err != nil {
				return fmt.Errorf("%s %s: %w", s.name, op.key, err)
			}
			logf("   %s %s: p50 %.0f ms, %.2f CPU-s each, peak RSS %d MiB (before %d MiB)", s.name, op.key, median(fig.wallMS), fig.cpuPer(),
				fig.peakRSS>>20, fig.baseRSS>>20)
			res.figs[op.key] = append(res.figs[op.key], fig)
		}
	}
	rep.gops = res
	return nil
}

// measureGopsOp runs op n times in a row on s, metering its trees.
func measureGopsOp(ctx context.Context, s compatSystem, op gopsOp) (gopsFigure, error) {
	if err := sleepCtx(ctx, docSettle); err != nil {
		return gopsFigure{}, err
	}
	fig := gopsFigure{baseRSS: treeRSS(s.pids)}
	for _, pid := range s.pids {
		fig.rootRSS = append(fig.rootRSS, treeRSS([]int{pid}))
	}
	peak := startPeakRSS(s.pids)
	cpu := s.metered()
	for i := range op.n {
		t0 := time.Now()
		if err := op.one(ctx, s, i); err != nil {
			cpu()
			peak()
			return fig, err
		}
		fig.wallMS = append(fig.wallMS, msOf(time.Since(t0)))
	}
	time.Sleep(docSettle)
	fig.cpu, fig.peakRSS = cpu(), peak()
	return fig, nil
}

// startCompatAPI starts one bin/worker and bin/api in front of it, as
// section G runs them.
func startCompatAPI(ctx context.Context, e *benchEnv, name string) (compatSystem, func(), error) {
	f, err := startBinaryFleet(ctx, e, name, 1)
	if err != nil {
		return compatSystem{}, nil, err
	}
	addr := freeAddr()
	if addr == "" {
		f.stop()
		return compatSystem{}, nil, fmt.Errorf("no free port")
	}
	api, err := harness.Start(name+"-api", filepath.Join(f.dir, "api.log"), filepath.Join(e.o.bin, "api"),
		append(slices.Clone(f.env), "API_ADDR="+addr, "LOG_LEVEL=warn"))
	if err != nil {
		f.stop()
		return compatSystem{}, nil, err
	}
	stop := func() { api.Kill(); f.stop() }
	if err := waitReady(ctx, "http://"+addr+"/healthz", api, 30*time.Second); err != nil {
		stop()
		return compatSystem{}, nil, err
	}
	pids := []int{api.PID(), e.redis.Proc.PID()}
	for _, p := range f.procs {
		pids = append(pids, p.PID())
	}
	return compatSystem{name: "pdfexport (bin/api + 1 bin/worker)",
		g: &gotenbergServer{base: "http://" + addr, http: &http.Client{Timeout: 5 * time.Minute}}, pids: pids}, stop, nil
}

// treeRSS is the resident memory of the trees rooted at roots, summed.
func treeRSS(roots []int) int64 {
	var sum int64
	for _, pid := range append(slices.Clone(roots), proctree.Descendants(roots...)...) {
		sum += procRSS(pid)
	}
	return sum
}

// procRSS is VmRSS of /proc/PID/status in bytes (0 when gone).
func procRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// rssBreakdown is the trees' resident memory by process name, for the log.
func rssBreakdown(roots []int) string {
	by := map[string]int64{}
	count := map[string]int{}
	for _, pid := range append(slices.Clone(roots), proctree.Descendants(roots...)...) {
		name := "?"
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
			name = strings.TrimSpace(string(b))
		}
		by[name] += procRSS(pid)
		count[name]++
	}
	parts := make([]string, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s×%d %d MiB", name, count[name], by[name]>>20))
	}
	return strings.Join(parts, ", ")
}

// startPeakRSS samples treeRSS until the function it returns is called,
// which gives the highest sample.
func startPeakRSS(roots []int) func() int64 {
	var mu sync.Mutex
	peak := treeRSS(roots)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(gopsRSSEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				v := treeRSS(roots)
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// rows are section GO's summary lines against the real Gotenberg.
func (r *gopsResult) rows() []row {
	if r == nil || len(r.systems) < 2 {
		return nil
	}
	var rows []row
	for _, op := range r.ops {
		o, g := r.figs[op.key][0], r.figs[op.key][1]
		lat := median(o.wallMS) / median(g.wallMS)
		cell := func(f gopsFigure) string {
			return fmt.Sprintf("p50 %.0f ms, %.2f CPU-s each, peak RSS %d MiB (+%d MiB)", median(f.wallMS), f.cpuPer(), f.peakRSS>>20, f.grownRSS()>>20)
		}
		target := ""
		switch op.key {
		case "fresh":
			target = "≤ 0.9× latency — " + verdict(lat <= 0.9)
		case "screenshot":
			target = "≤ 1.0× latency — " + verdict(lat <= 1.0)
		default:
			rss := float64(o.peakRSS) / float64(g.peakRSS)
			grown := float64(o.grownRSS()) / float64(max(g.grownRSS(), 1))
			target = fmt.Sprintf("≤ 1.2× wall and peak RSS (tree peak %.2f×, growth %.2f×) — %s", rss, grown, verdict(lat <= 1.2 && rss <= 1.2))
		}
		rows = append(rows, row{"GO", op.what, cell(o), "Gotenberg " + cell(g), fmt.Sprintf("%.2f× wall", lat), target})
	}
	return rows
}

func (r *gopsResult) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## GO. Gotenberg's other routes on bin/api against the real Gotenberg\n\n")
	w("The same requests, one at a time, to bin/api (one bin/worker behind it) and, with `-gotenberg`, to a real Gotenberg 8: ")
	w("%d fresh HTML conversions of the standard document, %d screenshots of it, %d splits and %d text stamps of a %d-page PDF. ",
		gopsSamples, gopsSamples, gopsEngineN, gopsEngineN, gopsPages)
	w("CPU-seconds and resident memory are each system's process trees (bin/api, bin/worker and its Chromium, Redis; Gotenberg's ")
	w("tree with its Chromium and the PDF tools it runs), RSS sampled every %s; growth is the peak less the RSS before the requests, ", gopsRSSEvery)
	w("and the RSS before is also given per tree: bin/api, Redis, bin/worker with its Chromium; Gotenberg with its Chromium.\n\n")
	w("| operation | system | p50 wall | min–max | CPU-s each | RSS before | peak RSS | growth | RSS before per tree |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, op := range r.ops {
		for i, s := range r.systems {
			f := r.figs[op.key][i]
			per := make([]string, len(f.rootRSS))
			for j, v := range f.rootRSS {
				per[j] = strconv.FormatInt(v>>20, 10)
			}
			w("| %s | %s | %.0f ms | %.0f–%.0f ms | %.2f | %d MiB | %d MiB | %d MiB | %s MiB |\n", op.key, s, median(f.wallMS), slices.Min(f.wallMS), slices.Max(f.wallMS),
				f.cpuPer(), f.baseRSS>>20, f.peakRSS>>20, f.grownRSS()>>20, strings.Join(per, " + "))
		}
	}
	return b.String()
}
