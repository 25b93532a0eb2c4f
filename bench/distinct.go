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

	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
)

// The systems of the distinct-documents section (7).
const (
	sysPipeline1 = "pipeline, 1 bin/worker"
	sysPipeline2 = "pipeline, 2 bin/worker"
	sysBareShell = "bare tab, headless shell"
	sysBareFull  = "bare tab, full Chromium"
)

// distinctSystems in the order they run within a cell group.
var distinctSystems = []string{sysPipeline1, sysPipeline2, sysBareShell, sysBareFull}

// busyMachine is the share of the machine other work may use before
// section 7 counts CPU by process instead (distinctResult.byProcess).
const busyMachine = 0.2

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
// client count, summed over its bursts.
type distinctCell struct {
	doc, system string
	clients     int
	n           int
	wall        float64 // seconds, summed over the bursts
	cpu         float64 // machine CPU-seconds of the system in that time (see burst)
	parts       cpuParts
	rounds      []roundFig // each burst's own figures, in order
}

// roundFig is one burst of a cell: its exports, wall and CPU-seconds
// (the machine's, and the system's own processes').
type roundFig struct {
	n              int
	wall, cpu, own float64
}

func (c distinctCell) rate() float64   { return float64(c.n) / c.wall }
func (c distinctCell) cpuPer() float64 { return c.cpu / float64(c.n) }

// add counts a burst of n exports.
func (c *distinctCell) add(n int, b burst) {
	c.n += n
	c.wall += b.wall
	c.cpu += b.cpu
	c.parts = c.parts.add(b.parts)
	c.rounds = append(c.rounds, roundFig{n: n, wall: b.wall, cpu: b.cpu, own: b.parts.total()})
}

// roundRatios are the ratios of c's rounds to base's, round by round
// (the systems took turns within each round): throughput, CPU per PDF
// (machine or own), as distributions for their spread.
func roundRatios(c, base distinctCell, own bool) (throughput, cpu dist) {
	for i := range min(len(c.rounds), len(base.rounds)) {
		x, y := c.rounds[i], base.rounds[i]
		throughput = append(throughput, (float64(x.n)/x.wall)/(float64(y.n)/y.wall))
		xc, yc := x.cpu, y.cpu
		if own {
			xc, yc = x.own, y.own
		}
		cpu = append(cpu, (xc/float64(x.n))/(yc/float64(y.n)))
	}
	return throughput, cpu
}

// spreadOf is a ratio's spread over the rounds, "(rounds a–b)", or ""
// when there is one round.
func spreadOf(d dist) string {
	if len(d) < 2 {
		return ""
	}
	return fmt.Sprintf(" (rounds %.2f–%.2f)", d.min(), d.max())
}

// cpuParts attributes CPU-seconds to the processes of a system: the
// workers' Go code, Chromium (every browser below a worker, or the peer's),
// Redis, and the clients (this process).
type cpuParts struct{ worker, chromium, redis, client float64 }

func (p cpuParts) add(q cpuParts) cpuParts {
	return cpuParts{p.worker + q.worker, p.chromium + q.chromium, p.redis + q.redis, p.client + q.client}
}

func (p cpuParts) per(n int) cpuParts {
	f := 1 / float64(n)
	return cpuParts{p.worker * f, p.chromium * f, p.redis * f, p.client * f}
}

func (p cpuParts) String() string {
	return fmt.Sprintf("Chromium %s · worker %s · Redis %s · clients %s", num(p.chromium), num(p.worker), num(p.redis), num(p.client))
}

// distinctSystem is one system under test, started once per document and
// kept warm while the others take their turns.
type distinctSystem struct {
	name      string
	one       func(ctx context.Context, i int) error // one export (or print), i distinct
	workers   []int                                  // worker processes (own CPU = worker, the rest of their trees = Chromium)
	chromiums []int                                  // browsers driven from this process
	redis     int                                    // the Redis it uses, 0 for none
	stop      func()
	treeCPU   func(pid int) (own, tree time.Duration) // nil: proctree.CPU
}

// cpu reads the CPU so far of the system's processes (proctree.CPU).
func (s *distinctSystem) cpu() (p cpuParts) {
	cpuOf := proctree.CPU
	if s.treeCPU != nil {
		cpuOf = s.treeCPU
	}
	for _, pid := range s.workers {
		own, tree := cpuOf(pid)
		p.worker += own.Seconds()
		p.chromium += (tree - own).Seconds()
	}
	for _, pid := range s.chromiums {
		_, tree := cpuOf(pid)
		p.chromium += tree.Seconds()
	}
	if s.redis > 0 {
		own, _ := proctree.CPU(s.redis)
		p.redis = own.Seconds()
	}
	return p
}

func (p cpuParts) minus(q cpuParts) cpuParts {
	return cpuParts{p.worker - q.worker, p.chromium - q.chromium, p.redis - q.redis, p.client - q.client}
}

func (p cpuParts) total() float64 { return p.worker + p.chromium + p.redis + p.client }

type distinctResult struct {
	idle   float64 // machine busy fraction before the section, with nothing of ours running
	cores  int
	worker string // the Chromium the workers auto-detect
	rounds int    // bursts per cell
	docs   []distinctDoc
	cells  []distinctCell
	// gotenberg is the comparison with the real Gotenberg (-gotenberg).
	gotenberg *gotenbergDistinct
	// byProcess: the machine was busy with other work (idle above
	// busyMachine), so CPU is the systems' own processes (proctree) and the
	// clients rather than the machine's busy time less a rate of other work
	// that does not hold still.
	byProcess bool
}

func (d *distinctResult) cell(doc, system string, clients int) (distinctCell, bool) {
	for _, c := range d.cells {
		if c.doc == doc && c.system == system && c.clients == clients {
			return c, true
		}
	}
	return distinctCell{}, false
}

func (d *distinctResult) cellPtr(doc, system string, clients int) *distinctCell {
	for i := range d.cells {
		if c := &d.cells[i]; c.doc == doc && c.system == system && c.clients == clients {
			return c
		}
	}
	d.cells = append(d.cells, distinctCell{doc: doc, system: system, clients: clients})
	return &d.cells[len(d.cells)-1]
}

// machineBusySeconds is the CPU time all cores spent running since boot
// (/proc/stat: user, nice, system, irq, softirq; not idle, iowait or steal,
// the time the hypervisor gave to others).
func machineBusySeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	busy := 0.0
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
		x, _ := strconv.ParseFloat(f[i], 64)
		busy += x
	}
	return busy / 100, nil // USER_HZ
}

// closedLoop runs n jobs with c clients, each doing one job at a time
// (one(ctx, i) for i in first..first+n-1), and returns the wall time.
func closedLoop(ctx context.Context, c, first, n int, one func(context.Context, int) error) (float64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := atomic.Int64{}
	next.Store(int64(first - 1))
	last := int64(first + n - 1)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range c {
		wg.Go(func() {
			for i := next.Add(1); i <= last && ctx.Err() == nil; i = next.Add(1) {
				if err := one(ctx, int(i)); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(t0).Seconds(), context.Cause(ctx)
}

// scenarioDistinct (7): distinct documents, the work no gate can save. For
// the Go specification and the sample manual, every system is started once
// and warmed: bin/worker (one process, and two), and as same-run baselines
// the peer's bare tab (a tab in the shared context of a chromedp Chromium)
// on the headless shell and on the full browser. Then, at 1, 2 and 4
// closed-loop clients (each waits for its PDF before asking for the next, as
// an API server does), the systems take turns in bursts of N/rounds exports,
// the order rotating each round, so that a drift of the machine's speed
// hits all of them alike.
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
	// Bursts of 6 and 8 exports; 4 rounds each, as 2 left the ratios
	// moving with the machine's speed from one run to the next.
	n := map[string]int{"gospec": 24, "manual": 32}
	rounds := 4
	if e.o.quick {
		n, rounds = map[string]int{"gospec": 4, "manual": 4}, 2
	}
	manual := e.manualRequest("x")
	res := &distinctResult{
		cores:  rep.machine.cores,
		rounds: rounds,
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
	res.byProcess = res.idle > busyMachine
	logf("   machine busy with other work before the section: %.1f %% (CPU by process: %v)", 100*res.idle, res.byProcess)
	for _, doc := range res.docs {
		if err := runDistinctDoc(ctx, e, res, doc, shell, full); err != nil {
			return fmt.Errorf("%s: %w", doc.name, err)
		}
	}
	res.gotenberg, err = runGotenbergDistinct(ctx, e, res, goSpec)
	return err
}

// runDistinctDoc starts every system for doc, measures its cells and stops
// the systems.
func runDistinctDoc(ctx context.Context, e *benchEnv, res *distinctResult, doc distinctDoc, shell, full string) error {
	var systems []*distinctSystem
	defer func() {
		for _, s := range systems {
			s.stop()
		}
	}()
	for _, name := range distinctSystems {
		s, err := startDistinctSystem(ctx, e, doc, name, shell, full)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		systems = append(systems, s)
	}
	if err := sleepCtx(ctx, 500*time.Millisecond); err != nil { // the warm-ups' processes exit
		return err
	}
	seq := 0
	for _, c := range distinctClients {
		for round := range res.rounds {
			for k := range systems {
				s := systems[(k+round)%len(systems)]
				if s.name == sysPipeline2 && c < 2 {
					continue
				}
				burst := doc.n / res.rounds
				b, err := measureBurst(ctx, res, systems, s, c, seq+1, burst)
				if err != nil {
					return fmt.Errorf("%s, %d clients: %w", s.name, c, err)
				}
				seq += burst
				res.cellPtr(doc.name, s.name, c).add(burst, b)
			}
		}
		for _, s := range systems {
			if cell, ok := res.cell(doc.name, s.name, c); ok {
				logf("   %-7s %d clients  %-26s %5.2f PDF/s  %5.2f CPU-s/PDF  (%d in %.1f s; %s)",
					doc.name, c, s.name, cell.rate(), cell.cpuPer(), cell.n, cell.wall, cell.parts.per(cell.n))
			}
		}
	}
	return nil
}

// burst is one measured run of a system.
type burst struct {
	wall, cpu float64
	parts     cpuParts
}

// measureBurst runs n exports of s at c clients. Its CPU is the machine's
// busy time over the burst, minus the rate of other work measured before
// the section, minus what the processes of the other systems (idle, but
// polling) used meanwhile; parts is what s's own processes and the clients
// used.
func measureBurst(ctx context.Context, res *distinctResult, all []*distinctSystem, s *distinctSystem, c, first, n int) (burst, error) {
	var b burst
	before := make([]cpuParts, len(all))
	for i, x := range all {
		before[i] = x.cpu()
	}
	client0, _ := proctree.CPU(os.Getpid())
	m0, err := machineBusySeconds()
	if err != nil {
		return b, err
	}
	wall, err := closedLoop(ctx, c, first, n, s.one)
	if err != nil {
		return b, err
	}
	m1, err := machineBusySeconds()
	if err != nil {
		return b, err
	}
	client1, _ := proctree.CPU(os.Getpid())
	others := 0.0
	for i, x := range all {
		d := x.cpu().minus(before[i])
		if x == s {
			b.parts = d
			continue
		}
		if x.redis == s.redis && s.redis > 0 {
			d.redis = 0 // the shared Redis served this burst
		}
		others += d.total()
	}
	b.parts.client = (client1 - client0).Seconds()
	b.wall = wall
	b.cpu = m1 - m0 - res.idle*float64(res.cores)*wall - others
	if res.byProcess {
		b.cpu = b.parts.total()
	}
	return b, nil
}

// startDistinctSystem starts and warms system name for doc.
func startDistinctSystem(ctx context.Context, e *benchEnv, doc distinctDoc, name, shell, full string) (*distinctSystem, error) {
	s := &distinctSystem{name: name, stop: func() {}}
	switch name {
	case sysPipeline1, sysPipeline2:
		workers := 1
		if name == sysPipeline2 {
			workers = 2
		}
		f, err := startBinaryFleet(ctx, e, fmt.Sprintf("distinct-%s-%d", doc.name, workers), workers)
		if err != nil {
			return nil, err
		}
		s.stop = f.stop
		for _, p := range f.procs {
			s.workers = append(s.workers, p.PID())
		}
		s.redis = e.redis.Proc.PID()
		if err := warmWorkers(ctx, f, exportclient.Request{ManualID: "warm", HTML: doc.html, Options: doc.opts}); err != nil {
			f.stop()
			return nil, err
		}
		tag := freshVersion("d")
		s.one = func(ctx context.Context, i int) error {
			req := exportclient.Request{ManualID: "distinct-" + doc.name, Version: tag + "-" + strconv.Itoa(i), HTML: doc.html, Options: doc.opts}
			return exportRendered(ctx, f.client, req, i)
		}
	default:
		path := full
		if name == sysBareShell {
			path = shell
		}
		b, err := peer.Start(ctx, path)
		if err != nil {
			return nil, err
		}
		s.stop = b.Close
		s.chromiums = []int{b.PID()}
		params := render.PrintParams(settingsOf(doc.opts))
		s.one = func(ctx context.Context, _ int) error {
			n, err := b.Print(ctx, doc.html, doc.opts.WaitFor, params, io.Discard)
			if err == nil && n == 0 {
				err = errors.New("empty PDF")
			}
			return err
		}
		if err := s.one(ctx, 0); err != nil {
			b.Close()
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	return s, nil
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
// the pipeline against the bare tab on the same build, with its
// targets: every row at least the bare tab's throughput for no more of its
// CPU, and the sample manual at 1 client 1.1× its throughput.
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
			minTr := 1.0
			if doc.name == "manual" && c == 1 {
				minTr = 1.1
			}
			ok := cr <= 1.0 && tr >= minTr
			target := fmt.Sprintf("throughput ≥ %.1f×, CPU ≤ 1.0×", minTr)
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
			if two, ok := d.cell(doc.name, sysPipeline2, c); ok {
				rows = append(rows, d.twoWorkersRow(p, two))
			}
		}
	}
	return append(rows, d.gotenberg.rows()...)
}

// markdown is the distinct documents section of the report: every cell.
func (d *distinctResult) markdown() string {
	var b strings.Builder
	same := d.sameBuild()
	fmt.Fprintf(&b, "\n## 7. Distinct documents\n\n")
	cpuText := fmt.Sprintf("CPU is the whole machine's busy time over a burst (`/proc/stat`: user, nice, system, irq, softirq), minus the rate of other work measured before the section (%.1f %% of %d cores) and minus what the other systems' idle processes used meanwhile; the breakdown is the system's own processes and the clients.", 100*d.idle, d.cores)
	if d.byProcess {
		cpuText = fmt.Sprintf("Other work kept the machine %.0f %% busy before the section (more than %.0f %%), so CPU is the system's own processes over a burst (proctree: own and reaped children) and the clients, the breakdown's sum, and wall times and throughput are those of a shared machine.", 100*d.idle, 100*busyMachine)
	}
	fmt.Fprintf(&b, "Workers run `%s` (auto-detected). Every system is started once per document; at each client count they take turns in %d bursts each, the order rotating. %s Ratios are against the bare tab on the same build (%s).\n\n", d.worker, d.rounds, cpuText, same)
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
				fmt.Fprintf(&b, "| %s | %d | %s | %d | %s | %s | %s | %s | %s | %s |\n", doc.name, c, sys, x.n, num(x.wall), num(x.rate()), num(x.cpuPer()), tr, cr, x.parts.per(x.n))
			}
		}
	}
	b.WriteString(d.gotenberg.markdown())
	return b.String()
}

// exportRendered enqueues req (the i-th export of a burst), waits for it,
// and fails unless it completed with a render of its own: a burst of
// distinct documents that reused a stored PDF measures nothing.
func exportRendered(ctx context.Context, c *exportclient.Client, req exportclient.Request, i int) error {
	job, err := c.Enqueue(ctx, req)
	if err != nil {
		return err
	}
	st, err := c.Wait(ctx, job.TaskID, 0)
	if err != nil {
		return err
	}
	if st.State != exportclient.StateCompleted || st.Result == nil || !st.Result.Rendered {
		return fmt.Errorf("%w: export %d: state %s, error %q, result %+v", errScenario, i, st.State, st.Error, st.Result)
	}
	return nil
}

// twoWorkersRow compares two bin/worker processes on this machine with
// one. On a machine whose cores one worker's Chromium already keeps busy,
// a second process cannot add throughput, only its own browser's upkeep
// (docs/SCALING.md): the goal is that this upkeep stays small, that two
// workers on one host keep ≥ 0.9× of one's throughput at ≤ 1.15× its CPU
// per PDF; more throughput is more hosts.
func (d *distinctResult) twoWorkersRow(one, two distinctCell) row {
	r, cr := two.rate()/one.rate(), two.cpuPer()/one.cpuPer()
	busy := one.cpu / one.wall / float64(max(d.cores, 1))
	return row{"7", "↳ " + sysPipeline2 + " on the same machine",
		fmt.Sprintf("%s PDF/s · %s CPU-s/PDF", num(two.rate()), num(two.cpuPer())),
		fmt.Sprintf("%s (the machine %.0f %% busy)", sysPipeline1, 100*busy),
		fmt.Sprintf("throughput %s · CPU %s", ratio(r), ratio(cr)),
		"a second browser's upkeep: throughput ≥ 0.9×, CPU ≤ 1.15× — " + verdict(r >= 0.9 && cr <= 1.15)}
}
