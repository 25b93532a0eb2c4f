package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
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
	rounds  []fairnessRound
	// CPU-seconds per PDF (worker processes and their Chromium), each kind
	// measured alone, in the first round.
	cpuBatch, cpuInteractive float64
}

// fairnessRound is one measurement of a cell: the interactive exports
// with the worker idle, the batch alone, then the batch with interactive
// exports beside it, back to back, so that a ratio compares figures of
// one stretch of time (the host's speed drifts between stretches).
type fairnessRound struct {
	// Interactive export latency (enqueue → final, seconds) with the
	// worker idle and during the batch, and the render's share of each
	// (the result's render_ms).
	idle, busy             dist
	idleRender, busyRender dist
	// Batch throughput alone and with the interactive exports (PDF/s).
	batchAlone, batchBusy float64
}

// ratios are the round's figures the targets judge.
func (r fairnessRound) ratios() (p50, max, batch float64) {
	return r.busy.median() / r.idle.median(), r.busy.max() / r.idle.median(), r.batchBusy / r.batchAlone
}

// fairnessTargets are the targets every round must meet.
const (
	fairnessP50Target   = 1.5
	fairnessMaxTarget   = 2.5
	fairnessBatchTarget = 0.85
)

func (r fairnessRound) met() bool {
	p50, mx, thr := r.ratios()
	return p50 <= fairnessP50Target && mx <= fairnessMaxTarget && thr >= fairnessBatchTarget
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
	fleets, err := fleetSizes(e.o.fairnessFleets)
	if err != nil {
		return err
	}
	for _, workers := range fleets {
		designs := []fairnessDesign{{"batch lane", "batch"}}
		if e.o.fairnessOneLane {
			designs = append(designs, fairnessDesign{"one lane (before)", ""})
		}
		for _, d := range designs {
			cell, err := measureFairness(ctx, e, d, workers, batchN)
			if err != nil {
				return fmt.Errorf("%s, %d worker(s): %w", d.name, workers, err)
			}
			res.cells = append(res.cells, cell)
		}
	}
	return nil
}

// fairnessDesign is a design of scenario 11: its name and the worker's
// BATCH_QUEUES (none: one lane).
type fairnessDesign struct{ name, batchQueues string }

// measureFairness runs one design with n worker processes, -fairness-rounds
// times.
func measureFairness(ctx context.Context, e *benchEnv, d fairnessDesign, n, batchN int) (fairnessCell, error) {
	cell := fairnessCell{design: d.name, workers: n, batchN: batchN}
	tag := "lanes"
	if d.batchQueues == "" {
		tag = "onelane"
	}
	f, err := startBinaryFleet(ctx, e, fmt.Sprintf("fairness-%s-%d", tag, n), n, "BATCH_QUEUES="+d.batchQueues)
	if err != nil {
		return cell, err
	}
	defer f.stop()
	ff := &fairnessFleet{f: f, tag: tag, n: n}
	for _, p := range f.procs {
		ff.roots = append(ff.roots, p.PID())
	}
	// Warm both lanes' browsers (the batch lane starts its own on its
	// first render): a round's "batch alone" must not pay a browser's
	// start that its "batch with interactive" does not.
	if _, _, err := ff.interactive(ctx); err != nil {
		return cell, err
	}
	if _, err := ff.batch(ctx, 2*n); err != nil {
		return cell, err
	}
	for round := range e.o.fairnessRounds {
		r, err := ff.round(ctx, &cell, round == 0)
		if err != nil {
			return cell, err
		}
		cell.rounds = append(cell.rounds, r)
		p50, mx, thr := r.ratios()
		logf("   fairness %s ×%d round %d: interactive idle p50 %.2fs (render %.2fs), during batch p50 %.2fs max %.2fs (render p50 %.2fs max %.2fs); batch %.2f PDF/s alone, %.2f with interactive: p50 %.2f×, max %.2f×, batch %.2f×",
			d.name, n, round+1, r.idle.median(), r.idleRender.median(), r.busy.median(), r.busy.max(), r.busyRender.median(), r.busyRender.max(),
			r.batchAlone, r.batchBusy, p50, mx, thr)
		logf("     idle %s | busy %s | busy render %s", seconds(r.idle), seconds(r.busy), seconds(r.busyRender))
	}
	return cell, nil
}

// fairnessFleet is the fleet of one cell of scenario 11 and the count of
// the versions it exported, so that every export is a distinct document.
type fairnessFleet struct {
	f                 *fleet
	tag               string
	n                 int
	roots             []int // the worker processes
	version, batchRun int
}

// cpu is the worker processes' CPU-seconds so far, Chromium included.
func (ff *fairnessFleet) cpu() float64 {
	var s time.Duration
	for _, r := range ff.roots {
		_, t := proctree.CPU(r)
		s += t
	}
	return s.Seconds()
}

// interactive returns an export's latency and its render's share.
func (ff *fairnessFleet) interactive(ctx context.Context) (total, render float64, err error) {
	ff.version++
	req := exportclient.Request{ManualID: "reader", Version: fmt.Sprintf("%s-%d-%d", ff.tag, ff.n, ff.version),
		HTML: pagesDoc(fmt.Sprintf("interactive %d", ff.version), fairnessInteractivePages)}
	start := time.Now()
	job, err := ff.f.client.Enqueue(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	st, err := ff.f.client.Wait(ctx, job.TaskID, 0)
	if err != nil || st.State != exportclient.StateCompleted || st.Result == nil {
		return 0, 0, fmt.Errorf("interactive export: %+v, %v", st, err)
	}
	return time.Since(start).Seconds(), float64(st.Result.RenderMS) / 1000, nil
}

// batch enqueues count distinct documents on the batch queue and returns
// their throughput once all completed.
func (ff *fairnessFleet) batch(ctx context.Context, count int) (float64, error) {
	ff.batchRun++
	var jobs []exportclient.Enqueued
	start := time.Now()
	for i := range count {
		req := exportclient.Request{ManualID: "catalogue", Version: fmt.Sprintf("%s-%d-%d-%d", ff.tag, ff.n, ff.batchRun, i),
			HTML: pagesDoc(fmt.Sprintf("catalogue %d %d", ff.batchRun, i), fairnessBatchPages)}
		job, err := ff.f.client.Enqueue(ctx, req, exportclient.Queue("batch"))
		if err != nil {
			return 0, err
		}
		jobs = append(jobs, job)
	}
	for _, job := range jobs {
		st, err := ff.f.client.Wait(ctx, job.TaskID, 0)
		if err != nil || st.State != exportclient.StateCompleted {
			return 0, fmt.Errorf("batch export: %+v, %v", st, err)
		}
	}
	return float64(count) / time.Since(start).Seconds(), nil
}

// round is one round of the cell: the interactive exports idle, the batch
// alone, then the batch with interactive exports. The first round also
// sets the cell's CPU per PDF.
func (ff *fairnessFleet) round(ctx context.Context, cell *fairnessCell, first bool) (fairnessRound, error) {
	var r fairnessRound
	c0 := ff.cpu()
	for range fairnessInteractiveN {
		total, render, err := ff.interactive(ctx)
		if err != nil {
			return r, err
		}
		r.idle, r.idleRender = append(r.idle, total), append(r.idleRender, render)
	}
	if first {
		cell.cpuInteractive = (ff.cpu() - c0) / fairnessInteractiveN
	}
	c0 = ff.cpu()
	var err error
	if r.batchAlone, err = ff.batch(ctx, cell.batchN); err != nil {
		return r, err
	}
	if first {
		cell.cpuBatch = (ff.cpu() - c0) / float64(cell.batchN)
	}
	if err := ff.batchWithInteractive(ctx, &r, cell.batchN); err != nil {
		return r, err
	}
	return r, nil
}

// batchWithInteractive runs the batch with interactive exports one after
// another from 2 s in.
func (ff *fairnessFleet) batchWithInteractive(ctx context.Context, r *fairnessRound, batchN int) error {
	var wg sync.WaitGroup
	var ierr error
	bctx, bcancel := context.WithCancel(ctx)
	wg.Go(func() {
		select {
		case <-time.After(2 * time.Second):
		case <-bctx.Done():
			return
		}
		for range fairnessInteractiveN {
			total, render, err := ff.interactive(bctx)
			if err != nil {
				ierr = err
				return
			}
			r.busy, r.busyRender = append(r.busy, total), append(r.busyRender, render)
		}
	})
	var err error
	r.batchBusy, err = ff.batch(ctx, batchN)
	if err != nil {
		bcancel() // the exports beside a failed batch are not waited for
	}
	// With one lane the interactive exports may still queue behind the
	// batch's last tasks: they are waited for, not canceled.
	wg.Wait()
	bcancel()
	if err != nil {
		return err
	}
	if ierr != nil {
		return ierr
	}
	if len(r.busy) < fairnessInteractiveN {
		return fmt.Errorf("only %d interactive exports ran during the batch: make it longer", len(r.busy))
	}
	return nil
}

// fleetSizes parses -fairness-fleets.
func fleetSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-fairness-fleets %q: %q is not a worker count ≥ 1", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// seconds lists samples in order, for the log.
func seconds(d dist) string {
	parts := make([]string, len(d))
	for i, v := range d {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(parts, " ")
}

func (r *fairnessResult) cell(design string, workers int) (fairnessCell, bool) {
	for _, c := range r.cells {
		if c.design == design && c.workers == workers {
			return c, true
		}
	}
	return fairnessCell{}, false
}

// fleets are the worker counts measured, in order.
func (r *fairnessResult) fleets() []int {
	var out []int
	for _, c := range r.cells {
		if !slices.Contains(out, c.workers) {
			out = append(out, c.workers)
		}
	}
	return out
}

func (r *fairnessResult) rows() []row {
	var rows []row
	for _, workers := range r.fleets() {
		lane, ok1 := r.cell("batch lane", workers)
		before, _ := r.cell("one lane (before)", workers)
		if !ok1 || len(lane.rounds) == 0 {
			continue
		}
		var p50s, maxes, thrs, beforeP50s dist
		met := 0
		for _, rd := range lane.rounds {
			p50, mx, thr := rd.ratios()
			p50s, maxes, thrs = append(p50s, p50), append(maxes, mx), append(thrs, thr)
			if rd.met() {
				met++
			}
		}
		for _, rd := range before.rounds {
			p50, _, _ := rd.ratios()
			beforeP50s = append(beforeP50s, p50)
		}
		rows = append(rows, row{"11", fmt.Sprintf("interactive exports during a re-render of %d × %d pages, %d worker(s), %d rounds", lane.batchN, fairnessBatchPages, workers, len(lane.rounds)),
			fmt.Sprintf("batch lane, per round: %d-page export p50 / max of idle %s / %s; batch of alone %s", fairnessInteractivePages,
				spread(p50s), spread(maxes), spread(thrs)),
			oneLane(beforeP50s),
			fmt.Sprintf("worst round: p50 %s, max %s, batch %s", ratio(p50s.max()), ratio(maxes.max()), ratio(thrs.min())),
			fmt.Sprintf("every round p50 ≤ %.1f×, max ≤ %.1f×, batch ≥ %.2f× (%d of %d rounds): %s", fairnessP50Target, fairnessMaxTarget, fairnessBatchTarget,
				met, len(lane.rounds), verdict(met == len(lane.rounds)))})
	}
	return rows
}

// spread is a ratio's range over rounds.
func spread(d dist) string {
	if d.min() == d.max() {
		return ratio(d.min())
	}
	return fmt.Sprintf("%.2f–%.2f×", d.min(), d.max())
}

func (r *fairnessResult) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## 11. Fairness: interactive exports during a catalogue re-render\n\n")
	w("bin/worker with its defaults; a batch of distinct %d-page documents on the `batch` queue, and %d interactive ", fairnessBatchPages, fairnessInteractiveN)
	w("exports of a distinct %d-page document one after another on `default`, from 2 s into the batch. Latency is ", fairnessInteractivePages)
	w("enqueue → final through exportclient; throughput is batch PDFs over the batch's wall time. CPU is the worker ")
	w("processes and their Chromium (own + reaped children), per PDF, each kind measured alone. *One lane (before)* ")
	w("is the same binary with `BATCH_QUEUES=`: every queue in one asynq server and one Chromium, as before.\n\n")
	w("Each cell runs its rounds back to back on one fleet whose two browsers were warmed first; a round is the ")
	w("interactive exports idle, the batch alone, then the batch with interactive exports, so its ratios compare one ")
	w("stretch of time. *Render* is the result's `render_ms` (tab, load, readiness, print), the rest of the latency is ")
	w("pick-up, storage and the final announcement.\n\n")
	w("| design | workers | batch | round | interactive idle p50 / max (render p50) | during batch p50 / max (render p50 / max) | batch alone | batch with interactive | p50 / max of idle, batch of alone | CPU-s per PDF: batch / interactive |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.cells {
		for i, rd := range c.rounds {
			p50, mx, thr := rd.ratios()
			w("| %s | %d | %d | %d | %.2f / %.2f s (%.2f) | %.2f / %.2f s (%.2f / %.2f) | %.2f PDF/s | %.2f PDF/s | %.2f× / %.2f×, %.2f× | %.2f / %.2f |\n", c.design, c.workers, c.batchN, i+1,
				rd.idle.median(), rd.idle.max(), rd.idleRender.median(), rd.busy.median(), rd.busy.max(), rd.busyRender.median(), rd.busyRender.max(),
				rd.batchAlone, rd.batchBusy, p50, mx, thr, c.cpuBatch, c.cpuInteractive)
		}
	}
	return b.String()
}

// oneLane is the baseline cell of a fairness row: one lane's p50, or a
// dash when -fairness-one-lane=false left it out.
func oneLane(p50s dist) string {
	if len(p50s) == 0 {
		return "—"
	}
	return fmt.Sprintf("one lane (before): p50 of idle %s", spread(p50s))
}
