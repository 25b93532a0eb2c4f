package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/chromium"
	"github.com/pdfexport/pdfexport/internal/peer"
	"github.com/pdfexport/pdfexport/internal/proctree"
	"github.com/pdfexport/pdfexport/internal/render"
)

// The systems of the distinct-documents section (7).
const (
	sysPipeline1 = "pipeline, 1 bin/worker"
	sysPipeline2 = "pipeline, 2 bin/worker"
	sysBareShell = "bare tab, headless shell"
	sysBareFull  = "bare tab, full Chromium"
	sysOldFull   = "old design, full Chromium"
)

// distinctSystems in the order they run within a cell group.
var distinctSystems = []string{sysPipeline1, sysPipeline2, sysBareShell, sysBareFull, sysOldFull}

// distinctClients are the closed-loop client counts.
var distinctClients = []int{1, 2, 4}

// distinctDoc is one document of section 7.
type distinctDoc struct {
	name string
	html string
	opts exportclient.Options
	n    int // exports per cell
}

// distinctCell is N distinct exports of one document by one system at one
// client count.
type distinctCell struct {
	doc, system string
	clients     int
	n           int
	wall        float64 // seconds, first request to last PDF
	cpu         float64 // machine CPU-seconds in that time, idle-corrected
	parts       cpuParts
}

// cpuParts attributes CPU-seconds per PDF to the processes of the system:
// the workers' Go code, Chromium (every browser below a worker, or the
// peer's), Redis, and the clients (this process).
type cpuParts struct{ worker, chromium, redis, client float64 }

func (p cpuParts) String() string {
	return fmt.Sprintf("Chromium %s · worker %s · Redis %s · clients %s", num(p.chromium), num(p.worker), num(p.redis), num(p.client))
}

// usage is a snapshot of the CPU of a system's processes.
type usage struct {
	workers, chromiums []int
	redis              int
	worker, chromium   time.Duration
	redisCPU, client   time.Duration
}

func startUsage(workers []int, redis int, chromiums []int) *usage {
	u := &usage{workers: workers, chromiums: chromiums, redis: redis}
	u.worker, u.chromium, u.redisCPU, u.client = u.read()
	return u
}

// read returns the CPU so far of the workers (own), of Chromium (the
// workers' process trees without the workers, plus the peer browsers'
// trees), of Redis and of this process.
func (u *usage) read() (worker, chrome, redis, client time.Duration) {
	for _, pid := range u.workers {
		own, tree := proctree.CPU(pid)
		worker += own
		chrome += tree - own
	}
	for _, pid := range u.chromiums {
		_, tree := proctree.CPU(pid)
		chrome += tree
	}
	if u.redis > 0 {
		redis, _ = proctree.CPU(u.redis)
	}
	client, _ = proctree.CPU(os.Getpid())
	return worker, chrome, redis, client
}

// perPDF is the CPU since startUsage, per PDF of n.
func (u *usage) perPDF(n int) cpuParts {
	w, c, r, cl := u.read()
	per := func(d time.Duration) float64 { return d.Seconds() / float64(n) }
	return cpuParts{worker: per(w - u.worker), chromium: per(c - u.chromium), redis: per(r - u.redisCPU), client: per(cl - u.client)}
}

func (c distinctCell) rate() float64   { return float64(c.n) / c.wall }
func (c distinctCell) cpuPer() float64 { return c.cpu / float64(c.n) }

type distinctResult struct {
	idle   float64 // machine busy fraction before the section, with nothing of ours running
	cores  int
	worker string // the Chromium the workers auto-detect
	docs   []distinctDoc
	cells  []distinctCell
}

func (d *distinctResult) cell(doc, system string, clients int) (distinctCell, bool) {
	for _, c := range d.cells {
		if c.doc == doc && c.system == system && c.clients == clients {
			return c, true
		}
	}
	return distinctCell{}, false
}

// machineBusySeconds is the CPU time all cores spent not idle since boot
// (/proc/stat: everything but idle and iowait).
func machineBusySeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	busy := 0.0
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		x, _ := strconv.ParseFloat(v, 64)
		busy += x
	}
	return busy / 100, nil // USER_HZ
}

// closedLoop runs n jobs with c clients, each doing one job at a time
// (one(ctx, i) for i in 1..n), and returns the wall time and the machine's
// busy CPU-seconds over it.
func closedLoop(ctx context.Context, c, n int, one func(context.Context, int) error) (wall, cpu float64, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0, err := machineBusySeconds()
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	for range c {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n && ctx.Err() == nil; i = int(next.Add(1)) {
				if err := one(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	wall = time.Since(t0).Seconds()
	cpu1, err := machineBusySeconds()
	if err != nil {
		return 0, 0, err
	}
	if err := context.Cause(ctx); err != nil {
		return 0, 0, err
	}
	return wall, cpu1 - cpu0, nil
}

// scenarioDistinct (7): distinct documents, the work no gate can save. For
// the Go specification and the sample manual, at 1, 2 and 4 closed-loop
// clients (each waits for its PDF before asking for the next, as an API
// server does), N distinct exports through bin/worker (1 process; 2
// processes at 2 and 4 clients) and, as same-run baselines, N prints of the
// same document by the peer's bare design (a tab in the shared context of a
// chromedp Chromium, on the headless shell and on the full browser) and by
// the old design of this project (a browser context per render, full
// browser). Every system is started for its cell and stopped after it, so
// that no idle process of another system counts; one warm-up render each,
// not counted.
func scenarioDistinct(ctx context.Context, e *benchEnv, rep *report) error {
	shell, err := chromium.HeadlessShell()
	if err != nil {
		return err
	}
	full, err := chromium.FullBrowser()
	if err != nil {
		return err
	}
	goSpec, _, err := goSpecHTML(ctx)
	if err != nil {
		return err
	}
	n := map[string]int{"gospec": 12, "manual": 16}
	if e.o.quick {
		n = map[string]int{"gospec": 4, "manual": 4}
	}
	manual := e.manualRequest("x")
	res := &distinctResult{
		cores: rep.machine.cores,
		docs: []distinctDoc{
			{name: "gospec", html: goSpec, n: n["gospec"]},
			{name: "manual", html: manual.HTML, opts: manual.Options, n: n["manual"]},
		},
	}
	res.worker, _ = chromium.Find()
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		res.worker = p
	}
	rep.distinct = res
	res.idle = cpuBusy(ctx, 3*time.Second)
	logf("   machine busy with other work before the section: %.1f %%", 100*res.idle)
	for _, doc := range res.docs {
		for _, c := range distinctClients {
			for _, sys := range distinctSystems {
				if sys == sysPipeline2 && c < 2 {
					continue
				}
				cell, err := runDistinctCell(ctx, e, doc, sys, c, shell, full)
				if err != nil {
					return fmt.Errorf("%s, %s, %d clients: %w", doc.name, sys, c, err)
				}
				cell.cpu -= res.idle * float64(res.cores) * cell.wall
				res.cells = append(res.cells, cell)
				logf("   %-7s %d clients  %-26s %5.2f PDF/s  %5.2f CPU-s/PDF  (%d in %.1f s; %s)",
					doc.name, c, sys, cell.rate(), cell.cpuPer(), cell.n, cell.wall, cell.parts)
			}
		}
	}
	return nil
}

// runDistinctCell starts sys, warms it up, measures doc.n distinct exports
// at c clients and stops sys.
func runDistinctCell(ctx context.Context, e *benchEnv, doc distinctDoc, sys string, c int, shell, full string) (distinctCell, error) {
	cell := distinctCell{doc: doc.name, system: sys, clients: c, n: doc.n}
	var one func(context.Context, int) error
	var workerPIDs, chromiumPIDs []int // whose CPU the breakdown attributes
	redisPID := 0
	switch sys {
	case sysPipeline1, sysPipeline2:
		workers := 1
		if sys == sysPipeline2 {
			workers = 2
		}
		f, err := startBinaryFleet(ctx, e, fmt.Sprintf("distinct-%s-%d-%d", doc.name, c, workers), workers)
		if err != nil {
			return cell, err
		}
		defer f.stop()
		for _, p := range f.procs {
			workerPIDs = append(workerPIDs, p.cmd.Process.Pid)
		}
		redisPID = e.redis.p.cmd.Process.Pid
		if err := warmWorkers(ctx, f, exportclient.Request{ManualID: "warm", HTML: doc.html, Options: doc.opts}); err != nil {
			return cell, err
		}
		tag := freshVersion("d")
		one = func(ctx context.Context, i int) error {
			req := exportclient.Request{ManualID: "distinct-" + doc.name, Version: tag + "-" + strconv.Itoa(i), HTML: doc.html, Options: doc.opts}
			job, err := f.client.Enqueue(ctx, req)
			if err != nil {
				return err
			}
			st, err := f.client.Wait(ctx, job.TaskID, 20*time.Millisecond)
			if err != nil {
				return err
			}
			if st.State != exportclient.StateCompleted || st.Result == nil || !st.Result.Rendered {
				return fmt.Errorf("%w: export %d: state %s, error %q, result %+v", errScenario, i, st.State, st.Error, st.Result)
			}
			return nil
		}
	default:
		path, design := full, peer.SharedTab
		switch sys {
		case sysBareShell:
			path = shell
		case sysOldFull:
			design = peer.ContextPerRender
		}
		b, err := peer.Start(ctx, path)
		if err != nil {
			return cell, err
		}
		defer b.Close()
		chromiumPIDs = append(chromiumPIDs, b.PID())
		params := render.PrintParams(doc.opts.Settings())
		one = func(ctx context.Context, _ int) error {
			n, err := b.Print(ctx, design, doc.html, doc.opts.WaitFor, params, io.Discard)
			if err == nil && n == 0 {
				err = errors.New("empty PDF")
			}
			return err
		}
		if err := one(ctx, 0); err != nil { // warm-up
			return cell, fmt.Errorf("warm-up: %w", err)
		}
	}
	if err := sleepCtx(ctx, 300*time.Millisecond); err != nil { // the warm-up's processes exit
		return cell, err
	}
	usage := startUsage(workerPIDs, redisPID, chromiumPIDs)
	wall, cpu, err := closedLoop(ctx, c, doc.n, one)
	if err != nil {
		return cell, err
	}
	cell.parts = usage.perPDF(doc.n)
	cell.wall, cell.cpu = wall, cpu
	return cell, nil
}

// warmWorkers makes every worker of f render req once (distinct versions,
// spaced out until each process's pdfexport_renders_total counts one), so
// that no measured export pays for a cold Chromium.
func warmWorkers(ctx context.Context, f *fleet, req exportclient.Request) error {
	for round := 1; ; round++ {
		counts, err := f.metric(ctx, metricRendersOK)
		if err != nil {
			return err
		}
		if !slices.Contains(counts, 0) {
			return nil
		}
		if round > 6 {
			return fmt.Errorf("%w: warm-up: after %d rounds renders per worker are %v", errScenario, round-1, counts)
		}
		var reqs []*request
		for range 2 * len(f.procs) {
			// Spaced out: an idle worker takes every task it finds in one poll.
			if err := sleepCtx(ctx, 150*time.Millisecond); err != nil {
				return err
			}
			req.Version = freshVersion("warm")
			r, err := f.enqueue(ctx, req)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := f.await(ctx, reqs, pollMany, 3*time.Minute); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
}

// sameBuild is the bare-tab system on the Chromium build the workers run.
func (d *distinctResult) sameBuild() string {
	if chromium.IsHeadlessShell(d.worker) {
		return sysBareShell
	}
	return sysBareFull
}

// rows are the summary lines of section 7: per document and client count,
// the pipeline against the bare tab on the same build, with the targets of
// the issue (CPU per PDF ≤ 1.0×; throughput ≥ 0.95× at 2 and 4 clients).
func (d *distinctResult) rows() []row {
	var rows []row
	same := d.sameBuild()
	for _, doc := range d.docs {
		for _, c := range distinctClients {
			p, ok1 := d.cell(doc.name, sysPipeline1, c)
			b, ok2 := d.cell(doc.name, same, c)
			if !ok1 || !ok2 {
				continue
			}
			tr, cr := p.rate()/b.rate(), p.cpuPer()/b.cpuPer()
			ok := cr <= 1.0
			target := "CPU ≤ 1.0×"
			if c >= 2 {
				ok = ok && tr >= 0.95
				target = "throughput ≥ 0.95×, CPU ≤ 1.0×"
			}
			rows = append(rows, row{"7", fmt.Sprintf("distinct %s, %d client(s): %s", doc.name, c, sysPipeline1),
				fmt.Sprintf("%s PDF/s · %s CPU-s/PDF", num(p.rate()), num(p.cpuPer())),
				fmt.Sprintf("%s: %s PDF/s · %s CPU-s/PDF", same, num(b.rate()), num(b.cpuPer())),
				fmt.Sprintf("throughput %s · CPU %s", ratio(tr), ratio(cr)),
				target + " — " + verdict(ok)})
			if f, ok := d.cell(doc.name, sysBareFull, c); ok && same != sysBareFull {
				rows = append(rows, row{"7", "↳ vs the peer on the full Chromium it ships with", "",
					fmt.Sprintf("%s: %s PDF/s · %s CPU-s/PDF", sysBareFull, num(f.rate()), num(f.cpuPer())),
					fmt.Sprintf("throughput %s · CPU %s", ratio(p.rate()/f.rate()), ratio(p.cpuPer()/f.cpuPer())), "figures"})
			}
			if o, ok := d.cell(doc.name, sysOldFull, c); ok {
				rows = append(rows, row{"7", "↳ vs the old design (browser context and window per render)", "",
					fmt.Sprintf("%s: %s PDF/s · %s CPU-s/PDF", sysOldFull, num(o.rate()), num(o.cpuPer())),
					fmt.Sprintf("throughput %s · CPU %s", ratio(p.rate()/o.rate()), ratio(p.cpuPer()/o.cpuPer())), "figures"})
			}
			if two, ok := d.cell(doc.name, sysPipeline2, c); ok {
				r := two.rate() / p.rate()
				rows = append(rows, row{"7", "↳ " + sysPipeline2 + " on the same machine",
					fmt.Sprintf("%s PDF/s · %s CPU-s/PDF", num(two.rate()), num(two.cpuPer())),
					sysPipeline1, "throughput " + ratio(r), "not less than one worker — " + verdict(r >= 0.95)})
			}
		}
	}
	return rows
}

// markdown is section 7 of BENCHMARKS.md: every cell.
func (d *distinctResult) markdown() string {
	var b strings.Builder
	same := d.sameBuild()
	fmt.Fprintf(&b, "\n## 7. Distinct documents\n\n")
	fmt.Fprintf(&b, "Workers run `%s` (auto-detected). CPU is the whole machine's (all processes: Redis, workers, Chromium, the clients), from `/proc/stat`, minus the idle rate measured before the section (%.1f %% of %d cores) over the same time. Ratios are against the bare tab on the same build (%s).\n\n", d.worker, 100*d.idle, d.cores, same)
	fmt.Fprintf(&b, "| document | clients | system | exports | wall s | PDF/s | CPU-s/PDF | throughput vs bare | CPU vs bare | CPU-s/PDF by process |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, doc := range d.docs {
		for _, c := range distinctClients {
			base, hasBase := d.cell(doc.name, same, c)
			for _, sys := range distinctSystems {
				x, ok := d.cell(doc.name, sys, c)
				if !ok {
					continue
				}
				tr, cr := "–", "–"
				if hasBase {
					tr, cr = ratio(x.rate()/base.rate()), ratio(x.cpuPer()/base.cpuPer())
				}
				fmt.Fprintf(&b, "| %s | %d | %s | %d | %s | %s | %s | %s | %s | %s |\n", doc.name, c, sys, x.n, num(x.wall), num(x.rate()), num(x.cpuPer()), tr, cr, x.parts)
			}
		}
	}
	return b.String()
}
