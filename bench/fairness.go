package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/proctree"
)

// Fairness (section 11; interactive exports stay fast while a catalogue
// re-renders): bin/worker with its defaults re-renders a batch of distinct
// 50-page documents on the batch queue while interactive exports of a
// 10-page document run one after another on default. Measured for the
// shipped design (a batch lane: BATCH_QUEUES=batch) and for the baseline a
// user had before, one lane for every queue (BATCH_QUEUES=), with one and
// two worker processes, in the same run.

// fairnessBatch and fairnessInteractive are the sizes of the scenario.
const (
	fairnessBatchPages       = 50
	fairnessInteractivePages = 10
	fairnessInteractiveN     = 8
)

type fairnessCell struct {
	design  string // "batch lane" or "one lane (before)"
	workers int
	batchN  int
	// Interactive export latency (enqueue → final, seconds) with the
	// worker idle and during the batch.
	idle, busy dist
	// Batch throughput alone and with the interactive exports (PDF/s).
	batchAlone, batchBusy float64
	// CPU-seconds per PDF (worker processes and their Chromium), each kind
	// measured alone.
	cpuBatch, cpuInteractive float64
}

type fairnessResult struct{ cells []fairnessCell }

// pagesDoc is a distinct HTML document of n pages, each like a manual's:
// a heading, text, a table and a vector figure.
func pagesDoc(tag string, n int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><style>section{break-after:page} p{font:10pt serif;margin:2pt 0}
table{border-collapse:collapse;font:8pt sans-serif} td{border:1px solid #999;padding:1pt 3pt} tr:nth-child(odd){background:#eef}</style>`)
	for i := range n {
		fmt.Fprintf(&b, "<section><h1>%s, page %d</h1>", tag, i+1)
		for j := range 6 {
			fmt.Fprintf(&b, "<p>Paragraph %d of page %d of %s: text for the reader to read, with enough words to fill a line or two of the page.</p>", j, i+1, tag)
		}
		b.WriteString("<table>")
		for r := range 14 {
			fmt.Fprintf(&b, "<tr><td>%d.%d</td><td>setting</td><td>value %d</td><td>the effect of the setting on the product</td></tr>", i+1, r, r*i)
		}
		b.WriteString(`</table><svg width="600" height="160" viewBox="0 0 600 160">`)
		for k := range 120 {
			fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="%d" fill="hsl(%d,60%%,60%%)" opacity=".6"/>`, (k*37)%600, (k*53+i*7)%160, 3+k%9, (k*29+i*11)%360)
		}
		b.WriteString("</svg></section>")
	}
	return b.String()
}

func scenarioFairness(ctx context.Context, e *benchEnv, rep *report) error {
	res := &fairnessResult{}
	rep.fairness = res
	batchN := 60
	if e.o.quick {
		batchN = 12
	}
	for _, workers := range []int{1, 2} {
		for _, d := range []struct{ name, queues string }{{"batch lane", "batch"}, {"one lane (before)", ""}} {
			cell, err := measureFairness(ctx, e, d.name, d.queues, workers, batchN)
			if err != nil {
				return fmt.Errorf("%s, %d worker(s): %w", d.name, workers, err)
			}
			res.cells = append(res.cells, cell)
			logf("   fairness %s ×%d: interactive idle p50 %.2fs, during batch p50 %.2fs max %.2fs; batch %.2f PDF/s alone, %.2f with interactive",
				d.name, workers, cell.idle.median(), cell.busy.median(), cell.busy.max(), cell.batchAlone, cell.batchBusy)
		}
	}
	return nil
}

// measureFairness runs one design with n worker processes.
func measureFairness(ctx context.Context, e *benchEnv, name, batchQueues string, n, batchN int) (fairnessCell, error) {
	cell := fairnessCell{design: name, workers: n, batchN: batchN}
	tag := "lanes"
	if batchQueues == "" {
		tag = "onelane"
	}
	f, err := startBinaryFleet(ctx, e, fmt.Sprintf("fairness-%s-%d", tag, n), n, "BATCH_QUEUES="+batchQueues)
	if err != nil {
		return cell, err
	}
	defer f.stop()
	roots := make([]int, len(f.procs))
	for i, p := range f.procs {
		roots[i] = p.PID()
	}
	cpu := func() float64 {
		var s time.Duration
		for _, r := range roots {
			_, t := proctree.CPU(r)
			s += t
		}
		return s.Seconds()
	}
	version := 0
	interactive := func(ctx context.Context) (float64, error) {
		version++
		req := exportclient.Request{ManualID: "reader", Version: fmt.Sprintf("%s-%d-%d", tag, n, version),
			HTML: pagesDoc(fmt.Sprintf("interactive %d", version), fairnessInteractivePages)}
		start := time.Now()
		job, err := f.client.Enqueue(ctx, req)
		if err != nil {
			return 0, err
		}
		st, err := f.client.Wait(ctx, job.TaskID, 0)
		if err != nil || st.State != exportclient.StateCompleted {
			return 0, fmt.Errorf("interactive export: %+v, %v", st, err)
		}
		return time.Since(start).Seconds(), nil
	}
	batch := func(ctx context.Context, run string) (float64, error) {
		var jobs []exportclient.Enqueued
		start := time.Now()
		for i := range batchN {
			req := exportclient.Request{ManualID: "catalogue", Version: fmt.Sprintf("%s-%d-%s-%d", tag, n, run, i),
				HTML: pagesDoc(fmt.Sprintf("catalogue %s %d", run, i), fairnessBatchPages)}
			job, err := f.client.Enqueue(ctx, req, exportclient.Queue("batch"))
			if err != nil {
				return 0, err
			}
			jobs = append(jobs, job)
		}
		for _, job := range jobs {
			st, err := f.client.Wait(ctx, job.TaskID, 0)
			if err != nil || st.State != exportclient.StateCompleted {
				return 0, fmt.Errorf("batch export: %+v, %v", st, err)
			}
		}
		return float64(batchN) / time.Since(start).Seconds(), nil
	}

	// Warm both lanes' browsers, then the interactive exports alone.
	if _, err := interactive(ctx); err != nil {
		return cell, err
	}
	c0 := cpu()
	for range fairnessInteractiveN {
		s, err := interactive(ctx)
		if err != nil {
			return cell, err
		}
		cell.idle = append(cell.idle, s)
	}
	cell.cpuInteractive = (cpu() - c0) / fairnessInteractiveN
	// The batch alone.
	c0 = cpu()
	cell.batchAlone, err = batch(ctx, "alone")
	if err != nil {
		return cell, err
	}
	cell.cpuBatch = (cpu() - c0) / float64(batchN)
	// The batch with interactive exports one after another from 2 s in.
	var wg sync.WaitGroup
	var ierr error
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	wg.Go(func() {
		select {
		case <-time.After(2 * time.Second):
		case <-bctx.Done():
			return
		}
		for range fairnessInteractiveN {
			s, err := interactive(bctx)
			if err != nil {
				ierr = err
				return
			}
			cell.busy = append(cell.busy, s)
		}
	})
	cell.batchBusy, err = batch(ctx, "busy")
	wg.Wait()
	if err != nil {
		return cell, err
	}
	if ierr != nil {
		return cell, ierr
	}
	if len(cell.busy) < fairnessInteractiveN {
		return cell, fmt.Errorf("only %d interactive exports ran during the batch: make it longer", len(cell.busy))
	}
	return cell, nil
}

func (r *fairnessResult) cell(design string, workers int) (fairnessCell, bool) {
	for _, c := range r.cells {
		if c.design == design && c.workers == workers {
			return c, true
		}
	}
	return fairnessCell{}, false
}

func (r *fairnessResult) rows() []row {
	var rows []row
	for _, workers := range []int{1, 2} {
		lane, ok1 := r.cell("batch lane", workers)
		before, ok2 := r.cell("one lane (before)", workers)
		if !ok1 || !ok2 {
			continue
		}
		p50, mx := lane.busy.median()/lane.idle.median(), lane.busy.max()/lane.idle.median()
		thr := lane.batchBusy / lane.batchAlone
		rows = append(rows, row{"11", fmt.Sprintf("interactive exports during a re-render of %d × %d pages, %d worker(s)", lane.batchN, fairnessBatchPages, workers),
			fmt.Sprintf("batch lane: %d-page export p50 %.2f s, max %.2f s (idle p50 %.2f s); batch %.2f PDF/s (alone %.2f)", fairnessInteractivePages,
				lane.busy.median(), lane.busy.max(), lane.idle.median(), lane.batchBusy, lane.batchAlone),
			fmt.Sprintf("one lane (before): p50 %.2f s, max %.2f s (idle %.2f s); batch %.2f PDF/s", before.busy.median(), before.busy.max(), before.idle.median(), before.batchBusy),
			fmt.Sprintf("p50 %s, max %s of idle; batch %s of alone (before: p50 %s)", ratio(p50), ratio(mx), ratio(thr), ratio(before.busy.median()/before.idle.median())),
			fmt.Sprintf("p50 ≤ 1.5×, max ≤ 2.5×, batch ≥ 0.9×: %s", verdict(p50 <= 1.5 && mx <= 2.5 && thr >= 0.9))})
	}
	return rows
}

func (r *fairnessResult) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## 11. Fairness: interactive exports during a catalogue re-render\n\n")
	w("bin/worker with its defaults; a batch of distinct %d-page documents on the `batch` queue, and %d interactive\n", fairnessBatchPages, fairnessInteractiveN)
	w("exports of a distinct %d-page document one after another on `default`, from 2 s into the batch. Latency is\n", fairnessInteractivePages)
	w("enqueue → final through exportclient; throughput is batch PDFs over the batch's wall time. CPU is the worker\n")
	w("processes and their Chromium (own + reaped children), per PDF, each kind measured alone. *One lane (before)*\n")
	w("is the same binary with `BATCH_QUEUES=`: every queue in one asynq server and one Chromium, as before.\n\n")
	w("| design | workers | batch | interactive idle p50 / max | during batch p50 / max | batch alone | batch with interactive | CPU-s per PDF: batch / interactive |\n|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.cells {
		w("| %s | %d | %d | %.2f / %.2f s | %.2f / %.2f s | %.2f PDF/s | %.2f PDF/s | %.2f / %.2f |\n", c.design, c.workers, c.batchN,
			c.idle.median(), c.idle.max(), c.busy.median(), c.busy.max(), c.batchAlone, c.batchBusy, c.cpuBatch, c.cpuInteractive)
	}
	return b.String()
}
