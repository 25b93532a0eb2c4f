package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
)

// Budgets of the document options, against the plain export of the same
// run: each option may add this much CPU and wall time per export of the
// Go specification (outline on), and its heap peak above the worker's
// idle heap may be at most docHeapFactor × the PDF's size (the bound
// internal/tasks/export documents: pdfcpu holds one document, as about 25–35
// times its size for a tagged PDF of many small objects, one
// post-processing at a time). The heap figure is what the Go heap holds,
// garbage not yet collected included: what the process needs.
const (
	docCPUBudget  = 2.5  // × the plain export's CPU-seconds
	docWallBudget = 1.75 // × the plain export's wall time
	docHeapFactor = 40.0 // peak heap ≤ 40 × the printed (plain) PDF's bytes
	// docSettle is waited after each export before its CPU is read (the
	// same for every variant; the idle worker's polls in it are noise).
	docSettle = 500 * time.Millisecond
)

// docoptsResult is scenario D: one row per document option.
type docoptsResult struct {
	pages    int
	variants []docoptsFigures // plain first
	samples  int
}

type docoptsFigures struct {
	label string
	cpu   dist // CPU-seconds of the whole process tree (worker, Chromium, Redis) per export
	wall  dist // enqueue → completed, ms
	heap  dist // peak Go heap above the idle heap during the export, MiB
	bytes dist // PDF size, MiB
}

// scenarioDocOptions (D): the Go specification with the outline (tagged,
// the largest PDF of the report) exported plain and with each document
// option, on one in-process worker with real Chromium, interleaved round
// by round so every variant sees the same machine. Every export has a
// fresh version, so every one renders. Per export: the CPU-seconds of this
// process and its descendants (the worker is in-process; Chromium and
// redis-server are children), wall time from enqueue to the completed
// status, and the peak of the Go heap (runtime/metrics, sampled every
// millisecond, after a GC) above the heap before it.
func scenarioDocOptions(ctx context.Context, e *benchEnv, rep *report) error {
	goSpec, _, err := goSpecHTML(ctx)
	if err != nil {
		return err
	}
	f, err := startInProcFleet(ctx, e, "docopts", 1, workerSpec{})
	if err != nil {
		return err
	}
	defer f.stop()
	variants := []struct {
		label string
		opts  func(*exportclient.Options)
	}{
		{"plain (streamed)", func(*exportclient.Options) {}},
		{"metadata", func(o *exportclient.Options) {
			o.Metadata = &exportclient.Metadata{Title: "The Go Programming Language Specification", Author: "The Go Authors",
				Subject: "Language reference", Keywords: []string{"go", "spec"}, Language: "en"}
		}},
		{"watermark", func(o *exportclient.Options) { o.Watermark = &exportclient.Watermark{Text: "CONFIDENTIAL DRAFT"} }},
		{"encryption (AES-256)", func(o *exportclient.Options) {
			o.Encryption = &exportclient.Encryption{UserPassword: "bench-user", OwnerPassword: "bench-owner", Allow: []string{"print", "copy"}}
		}},
	}
	singles := variants[1:]
	variants = append(variants, struct {
		label string
		opts  func(*exportclient.Options)
	}{"all three", func(o *exportclient.Options) {
		for _, v := range singles {
			v.opts(o)
		}
	}}, struct {
		label string
		opts  func(*exportclient.Options)
	}{"fast web view (qpdf --linearize)", func(o *exportclient.Options) { o.FastWebView = true }})
	runs := e.o.runs
	res := &docoptsResult{samples: runs}
	rep.docopts = res
	res.variants = make([]docoptsFigures, len(variants))
	for i, v := range variants {
		res.variants[i].label = v.label
	}
	export := func(i int, round int) error {
		o := exportclient.Options{Outline: true}
		variants[i].opts(&o)
		runtime.GC()
		base := heapBytes()
		stop := sampleHeap()
		_, cpu0 := proctree.CPU(os.Getpid())
		t0 := time.Now()
		job, err := f.client.Enqueue(ctx, exportclient.Request{ManualID: "docopts", Version: freshVersion(fmt.Sprintf("d%d-%d", i, round)), HTML: goSpec, Options: o})
		if err != nil {
			stop()
			return err
		}
		st, err := f.client.Wait(ctx, job.TaskID, 5*time.Millisecond)
		wall := time.Since(t0)
		peak := stop()
		// The render's renderer process exits with its browser context,
		// after the result: its CPU counts once it has been reaped.
		time.Sleep(docSettle)
		_, cpu1 := proctree.CPU(os.Getpid())
		if err != nil {
			return err
		}
		if st.State != exportclient.StateCompleted || st.Result == nil {
			return fmt.Errorf("%s: %s %s: %w", variants[i].label, st.State, st.Error, errScenario)
		}
		if round >= 0 {
			r := &res.variants[i]
			r.cpu = append(r.cpu, (cpu1 - cpu0).Seconds())
			r.wall = append(r.wall, msOf(wall))
			r.heap = append(r.heap, float64(max(peak, base)-base)/(1<<20))
			r.bytes = append(r.bytes, float64(st.Result.Bytes)/(1<<20))
			res.pages = st.Result.Pages
		}
		return nil
	}
	if err := export(0, -1); err != nil { // warm-up: browser start, caches
		return err
	}
	for round := range runs {
		for i := range variants {
			if err := export(i, round); err != nil {
				return err
			}
		}
	}
	for _, r := range res.variants {
		logf("   %s: CPU %s s, wall %s ms, peak heap +%s MiB, PDF %s MiB", r.label, r.cpu.mmm(""), r.wall.mmm(""), r.heap.mmm(""), r.bytes.mmm(""))
	}
	return nil
}

func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap samples the heap every millisecond until the returned stop,
// which returns the peak.
func sampleHeap() (stop func() uint64) {
	var mu sync.Mutex
	var peak uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			h := heapBytes()
			mu.Lock()
			peak = max(peak, h)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

func (d *docoptsResult) rows() []row {
	if len(d.variants) == 0 || len(d.variants[0].cpu) == 0 {
		return nil
	}
	plain := d.variants[0]
	rows := []row{{"D", fmt.Sprintf("document options: Go spec, outline on (%d pages, %s MiB), plain export (streamed)", d.pages, num(plain.bytes.median())),
		fmt.Sprintf("CPU %s s · wall %s · heap +%s MiB", plain.cpu.mmm(""), plain.wall.mmm(" ms"), plain.heap.mmm("")), "—", "—", "baseline"}}
	for _, r := range d.variants[1:] {
		cpu, wall := r.cpu.median()/plain.cpu.median(), r.wall.median()/plain.wall.median()
		heapOK := r.heap.max() <= docHeapFactor*plain.bytes.median() // the printed PDF, which the limit bounds
		rows = append(rows, row{"D", "↳ " + r.label + " (spooled, post-processed, uploaded)",
			fmt.Sprintf("CPU %s s · wall %s · heap +%s MiB", r.cpu.mmm(""), r.wall.mmm(" ms"), r.heap.mmm("")),
			"plain, same run",
			fmt.Sprintf("CPU %s · wall %s", ratio(cpu), ratio(wall)),
			fmt.Sprintf("CPU ≤ %s, wall ≤ %s, peak heap ≤ %g× the printed PDF — %s", ratio(docCPUBudget), ratio(docWallBudget), docHeapFactor,
				verdict(cpu <= docCPUBudget && wall <= docWallBudget && heapOK))})
	}
	return rows
}

func (d *docoptsResult) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## D. Document options\n\n")
	fmt.Fprintf(&b, "The Go specification with the outline on (tagged), exported plain and with each document option ")
	fmt.Fprintf(&b, "(metadata, watermark, AES-256 encryption, all three; and the fast web view, linearized by qpdf) ")
	fmt.Fprintf(&b, "on one in-process worker with real Chromium, ")
	fmt.Fprintf(&b, "interleaved round by round, %d rounds, every export rendering (a fresh version). CPU is the whole ", d.samples)
	fmt.Fprintf(&b, "process tree's (worker, Chromium, redis-server) per export, read 0.5 s after it (so the renderer that ")
	fmt.Fprintf(&b, "exits with the browser context is counted); heap is the peak of the Go heap above ")
	fmt.Fprintf(&b, "the idle heap (runtime/metrics every millisecond). A plain export streams Chromium's PDF into ")
	fmt.Fprintf(&b, "storage; one with document options is spooled to a temporary file, post-processed file to file by ")
	fmt.Fprintf(&b, "pdfcpu (one at a time per worker), read back and checked (pages, tags, outline), then uploaded.\n\n")
	fmt.Fprintf(&b, "| variant | CPU-s | wall ms | peak heap MiB | PDF MiB |\n|---|---|---|---|---|\n")
	for _, r := range d.variants {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.label, r.cpu.mmm(""), r.wall.mmm(""), r.heap.mmm(""), r.bytes.mmm(""))
	}
	return b.String()
}
