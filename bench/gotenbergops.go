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
	gopsMemEvery = 20 * time.Millisecond
)

// gopsFigure is one operation's figures on one system.
type gopsFigure struct {
	wallMS  []float64 // per request
	cpu     float64   // CPU-seconds of the system's trees over all requests
	peak    memory    // the most the trees held at once
	base    memory    // what they held before the requests
	rootPSS []int64   // bytes before the requests, per tree (the system's pids)
}

// memory is what process trees hold, in bytes: Pss, each page shared by
// several processes split between them (what the trees take from the
// machine), and Rss, each shared page counted once per process mapping it.
type memory struct{ pss, rss int64 }

func (m memory) max(o memory) memory { return memory{max(m.pss, o.pss), max(m.rss, o.rss)} }

// grown is how much more the trees held at their peak than before.
func (f gopsFigure) grown() memory {
	return memory{f.peak.pss - f.base.pss, f.peak.rss - f.base.rss}
}

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
		logf("   %s Pss by process before the operations: %s", s.name, memBreakdown(s.pids))
		for _, op := range ops {
			fig, err := measureGopsOp(ctx, s, op)
			if err != nil {
				return fmt.Errorf("%s %s: %w", s.name, op.key, err)
			}
			logf("   %s %s: p50 %.0f ms, %.2f CPU-s each, peak Pss %d MiB (before %d MiB), peak Rss %d MiB", s.name, op.key, median(fig.wallMS), fig.cpuPer(),
				fig.peak.pss>>20, fig.base.pss>>20, fig.peak.rss>>20)
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
	fig := gopsFigure{base: treeMemory(s.pids)}
	for _, pid := range s.pids {
		fig.rootPSS = append(fig.rootPSS, treeMemory([]int{pid}).pss)
	}
	peak := startPeak(s.pids)
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
	fig.cpu, fig.peak = cpu(), peak()
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

// treeMemory is what the trees rooted at roots hold, summed.
func treeMemory(roots []int) memory {
	var sum memory
	for _, pid := range append(slices.Clone(roots), proctree.Descendants(roots...)...) {
		m := procMemory(pid)
		sum.pss += m.pss
		sum.rss += m.rss
	}
	return sum
}

// procMemory is Pss and Rss of /proc/PID/smaps_rollup (zero when gone).
func procMemory(pid int) memory {
	var m memory
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return m
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Pss:":
			m.pss = kb << 10
		case "Rss:":
			m.rss = kb << 10
		}
	}
	return m
}

// memBreakdown is the trees' proportional memory by process name, for
// the log.
func memBreakdown(roots []int) string {
	by := map[string]int64{}
	count := map[string]int{}
	for _, pid := range append(slices.Clone(roots), proctree.Descendants(roots...)...) {
		name := "?"
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
			name = strings.TrimSpace(string(b))
		}
		by[name] += procMemory(pid).pss
		count[name]++
	}
	parts := make([]string, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s×%d %d MiB", name, count[name], by[name]>>20))
	}
	return strings.Join(parts, ", ")
}

// startPeak samples treeMemory until the function it returns is called,
// which gives the highest samples.
func startPeak(roots []int) func() memory {
	var mu sync.Mutex
	peak := treeMemory(roots)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(gopsMemEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				v := treeMemory(roots)
				mu.Lock()
				peak = peak.max(v)
				mu.Unlock()
			}
		}
	}()
	return func() memory {
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
			return fmt.Sprintf("p50 %.0f ms, %.2f CPU-s each, peak Pss %d MiB (+%d MiB)", median(f.wallMS), f.cpuPer(), f.peak.pss>>20, f.grown().pss>>20)
		}
		target := ""
		switch op.key {
		case "fresh":
			target = "≤ 0.9× latency — " + verdict(lat <= 0.9)
		case "screenshot":
			target = "≤ 1.0× latency — " + verdict(lat <= 1.0)
		default:
			// The operation's memory is what it adds to the system at
			// rest: the trees' peaks are mostly that rest (a browser the
			// operation never touches, and here three processes where
			// Gotenberg has one), which section GO's table gives apart.
			grown := float64(o.grown().pss) / float64(max(g.grown().pss, 1<<20))
			tree := float64(o.peak.pss) / float64(g.peak.pss)
			rest := float64(o.base.pss) / float64(g.base.pss)
			target = fmt.Sprintf("≤ 1.2× wall and the memory it takes (%.2f×; tree peak %.2f×, at rest %.2f×) — %s", grown, tree, rest, verdict(lat <= 1.2 && grown <= 1.2))
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
	w("CPU-seconds and memory are each system's process trees (bin/api, bin/worker and its Chromium, Redis; Gotenberg's ")
	w("tree with its Chromium and the PDF tools it runs), sampled every %s from /proc/PID/smaps_rollup. ", gopsMemEvery)
	w("Memory is Pss, what the trees take from the machine (a page shared by several processes is split between them); ")
	w("Rss, which counts a shared page once per process mapping it and so grows with the number of Chromium processes, is beside it. ")
	w("Growth is the peak less the Pss before the requests, and the Pss before is also given per tree: bin/api, Redis, ")
	w("bin/worker with its Chromium; Gotenberg with its Chromium. A split or stamp runs in bin/api, in Gotenberg's one process: ")
	w("its goal compares the memory it takes (the growth), since each tree's peak is mostly the tree at rest, a browser the ")
	w("operation does not use and, for pdfexport, three processes (bin/api, Redis, bin/worker) where Gotenberg has one.\n\n")
	w("| operation | system | p50 wall | min–max | CPU-s each | Pss before | peak Pss | growth | peak Rss | Pss before per tree |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, op := range r.ops {
		for i, s := range r.systems {
			f := r.figs[op.key][i]
			per := make([]string, len(f.rootPSS))
			for j, v := range f.rootPSS {
				per[j] = strconv.FormatInt(v>>20, 10)
			}
			w("| %s | %s | %.0f ms | %.0f–%.0f ms | %.2f | %d MiB | %d MiB | %d MiB | %d MiB | %s MiB |\n", op.key, s, median(f.wallMS), slices.Min(f.wallMS), slices.Max(f.wallMS),
				f.cpuPer(), f.base.pss>>20, f.peak.pss>>20, f.grown().pss>>20, f.peak.rss>>20, strings.Join(per, " + "))
		}
	}
	return b.String()
}
