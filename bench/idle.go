package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/logging"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/worker"
)

// Section 12: what an idle worker costs Redis and a core, and how fast it
// picks up an export that arrives after seconds of idle, for three designs
// measured in the same run; and pick-up and throughput under load.

// idleWorkerEnv makes the bench binary an idle-section worker process
// (idleWorkerMain) instead of the benchmark.
const idleWorkerEnv = "PDFEXPORT_BENCH_IDLE_WORKER"

// idleDesign is one way of waiting for work.
type idleDesign struct {
	key, label string
	env        []string // on top of the production defaults
}

var idleDesigns = []idleDesign{
	{"asynq", "asynq's default: poll every 1 s, no doorbell", []string{"TASK_CHECK_INTERVAL=1s", "TASK_DOORBELL=false"}},
	{"10ms", "previous default: poll every 10 ms, no doorbell", []string{"TASK_CHECK_INTERVAL=10ms", "TASK_DOORBELL=false"}},
	{"doorbell", "worker default: doorbell, poll every " + defaultCheckInterval.String(), nil},
}

// idleRow is one design on one fleet size.
type idleRow struct {
	design      idleDesign
	workers     int
	cmdsPerSec  float64 // Redis commands/s over the idle window, all workers together
	cpuPerProc  dist    // each worker process's CPU over the window, fraction of one core
	redisCPU    float64 // redis-server's CPU over the window, fraction of one core
	pickAfterIO dist    // enqueue → handler start after 1-2 s of idle, ms
}

// loadRow is one design under load, one worker process.
type loadRow struct {
	design     idleDesign
	steady     dist    // enqueue → handler start, Poisson arrivals, ms
	rate       float64 // their rate, per s
	burst      int     // exports of the burst
	throughput dist    // per round: burst exports / (first enqueue → last handler end), per s
	burstPick  dist    // enqueue → handler start in the burst (queue wait included), ms
}

type idleResult struct {
	window time.Duration
	idle   []idleRow
	load   []loadRow
}

// scenarioIdle (12).
func scenarioIdle(ctx context.Context, e *benchEnv, rep *report) error {
	res := &idleResult{window: e.o.idleWindow}
	rep.idle = res
	for _, n := range []int{1, 10} {
		for _, d := range idleDesigns {
			r, err := idleRun(ctx, e, d, n)
			if err != nil {
				return fmt.Errorf("%s, %d workers: %w", d.key, n, err)
			}
			res.idle = append(res.idle, r)
			logf("   %d idle worker(s), %s: %.1f Redis commands/s (%.1f per worker), worker CPU %s %% of a core, redis-server %.2f %%; pick-up after idle %s",
				n, d.label, r.cmdsPerSec, r.cmdsPerSec/float64(n), r.cpuPerProc.mmm(""), 100*r.redisCPU, r.pickAfterIO.pcts(" ms"))
		}
	}
	res.load = make([]loadRow, len(idleDesigns))
	for round := range loadRounds {
		for i, d := range idleDesigns {
			if err := loadRun(ctx, e, d, round, &res.load[i]); err != nil {
				return fmt.Errorf("%s under load: %w", d.key, err)
			}
		}
	}
	for _, r := range res.load {
		logf("   under load, %s: pick-up at %.0f/s %s; bursts of %d: %s exports/s, pick-up %s",
			r.design.label, r.rate, r.steady.pcts(" ms"), r.burst, r.throughput.mmm(""), r.burstPick.pcts(" ms"))
	}
	return nil
}

// procFleet is a fleet of idle-section worker processes (this binary).
type procFleet struct {
	*fleet
	logs []*taskLog
}

// startProcFleet starts n worker processes of design d on a fresh database
// and waits until every one has started its queue server.
func startProcFleet(ctx context.Context, e *benchEnv, name string, n int, d idleDesign) (pf *procFleet, err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f, env, err := e.newFleet(name)
	if err != nil {
		return nil, err
	}
	pf = &procFleet{fleet: f}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	env = append(append(append(os.Environ(), env...), d.env...), idleWorkerEnv+"=1")
	for i := range n {
		logPath := filepath.Join(f.dir, fmt.Sprintf("worker-%d.log", i+1))
		p, err := harness.Start(fmt.Sprintf("%s-worker-%d", name, i+1), logPath, self, env)
		if err != nil {
			return pf, err
		}
		f.procs = append(f.procs, p)
		pf.logs = append(pf.logs, &taskLog{path: logPath, starts: map[string]time.Time{}, ends: map[string]time.Time{}})
		f.cl.add(func() {
			if err := p.Stop(30 * time.Second); err != nil && ctx.Err() == nil {
				logf("warning: %s did not exit cleanly on SIGTERM: %v (log %s)", p.Name, err, p.LogPath())
			}
			p.Kill()
		})
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready := 0
		for i, l := range pf.logs {
			if err := l.read(); err != nil {
				return pf, err
			}
			if l.ready {
				ready++
			} else if f.procs[i].Exited() {
				return pf, fmt.Errorf("%s exited: %s", f.procs[i].Name, f.procs[i].Tail(2000))
			}
		}
		if ready == n {
			return pf, nil
		}
		if time.Now().After(deadline) {
			return pf, fmt.Errorf("%d of %d workers ready after 60 s", ready, n)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return pf, err
		}
	}
}

// started returns when task id's handler started on any worker.
func (pf *procFleet) started(ctx context.Context, id string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range pf.logs {
			if err := l.read(); err != nil {
				return time.Time{}, err
			}
			if t, ok := l.starts[id]; ok {
				return t, nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%w: task %s not started within %s", errScenario, id, timeout)
		}
		if err := sleepCtx(ctx, time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// ended returns when task id's handler returned on any worker.
func (pf *procFleet) ended(ctx context.Context, id string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range pf.logs {
			if err := l.read(); err != nil {
				return time.Time{}, err
			}
			if t, ok := l.ends[id]; ok {
				return t, nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%w: task %s not finished within %s", errScenario, id, timeout)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// taskLog follows a worker process's log for the lines idleWorkerMain
// prints.
type taskLog struct {
	path   string
	off    int64
	rest   string
	ready  bool
	starts map[string]time.Time
	ends   map[string]time.Time
}

func (l *taskLog) read() error {
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	l.off += int64(len(b))
	text := l.rest + string(b)
	lines := strings.Split(text, "\n")
	l.rest = lines[len(lines)-1]
	for _, line := range lines[:len(lines)-1] {
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && f[0] == "IDLE-WORKER-READY":
			l.ready = true
		case len(f) == 3 && (f[0] == "TASK-START" || f[0] == "TASK-END"):
			ns, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				continue
			}
			if f[0] == "TASK-START" {
				l.starts[f[1]] = time.Unix(0, ns)
			} else {
				l.ends[f[1]] = time.Unix(0, ns)
			}
		}
	}
	return nil
}

// redisTotals reads the server's command calls (INFO commandstats, every
// command, those run by scripts included, minus INFO itself) and its CPU.
func redisTotals(ctx context.Context, rdb *redis.Client) (calls int64, cpu time.Duration, err error) {
	info, err := rdb.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return 0, 0, err
	}
	var cpuSec float64
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		if name, rest, ok := strings.Cut(line, ":calls="); ok && strings.HasPrefix(name, "cmdstat_") {
			if name == "cmdstat_info" {
				continue
			}
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			calls += n
		}
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				x, _ := strconv.ParseFloat(v, 64)
				cpuSec += x
			}
		}
	}
	return calls, time.Duration(cpuSec * float64(time.Second)), nil
}

func idleRequest(tag string) exportclient.Request {
	return exportclient.Request{ManualID: "idle", Version: freshVersion(tag), HTML: "<!doctype html><title>idle</title><p>idle</p>"}
}

// idleRun measures design d on n idle worker processes: Redis commands/s
// and CPU over the idle window, then pick-up of exports that arrive after
// 1-2 s of idle each.
func idleRun(ctx context.Context, e *benchEnv, d idleDesign, n int) (idleRow, error) {
	row := idleRow{design: d, workers: n}
	pf, err := startProcFleet(ctx, e, fmt.Sprintf("idle-%s-%d", d.key, n), n, d)
	if err != nil {
		return row, err
	}
	defer pf.stop()
	if err := sleepCtx(ctx, 3*time.Second); err != nil { // start-up's commands, first heartbeats
		return row, err
	}
	cpu0 := make([]time.Duration, n)
	for i, p := range pf.procs {
		cpu0[i], _ = proctree.CPU(p.PID())
	}
	calls0, rcpu0, err := redisTotals(ctx, pf.rdb)
	if err != nil {
		return row, err
	}
	t0 := time.Now()
	window := e.o.idleWindow
	if n == 1 {
		window *= 2 // one worker's polls and timers are the noisier sample
	}
	if err := sleepCtx(ctx, window); err != nil {
		return row, err
	}
	calls1, rcpu1, err := redisTotals(ctx, pf.rdb)
	if err != nil {
		return row, err
	}
	window = time.Since(t0)
	for i, p := range pf.procs {
		c, _ := proctree.CPU(p.PID())
		row.cpuPerProc = append(row.cpuPerProc, 100*float64(c-cpu0[i])/float64(window))
	}
	row.cmdsPerSec = float64(calls1-calls0) / window.Seconds()
	row.redisCPU = float64(rcpu1-rcpu0) / float64(window)

	failed := 0
	for len(row.pickAfterIO) < e.o.idleN {
		if err := sleepCtx(ctx, time.Second+rand.N(time.Second)); err != nil {
			return row, err
		}
		enq := time.Now()
		job, err := pf.client.Enqueue(ctx, idleRequest("idle"))
		if err != nil {
			// On a starved machine a reply can time out after Redis ran the
			// enqueue, and go-redis's retry then conflicts with it: the
			// sample is lost (its task runs all the same), the next is not.
			if failed++; failed > 3 || !errors.Is(err, exportclient.ErrUnavailable) {
				return row, err
			}
			logf("   warning: %s, %d workers: enqueue failed (%v); sample skipped", d.key, n, err)
			continue
		}
		start, err := pf.started(ctx, job.TaskID, 10*time.Second)
		if err != nil {
			return row, err
		}
		row.pickAfterIO = append(row.pickAfterIO, msOf(start.Sub(enq)))
		if _, err := pf.ended(ctx, job.TaskID, 30*time.Second); err != nil {
			return row, err
		}
	}
	return row, nil
}

// loadRounds is how many times each design is measured under load, the
// designs taking turns, so that a drift in the machine's speed (other work)
// hits all alike.
const loadRounds = 3

// loadRun measures design d on a fresh worker process under load, once
// (one round): Poisson arrivals at 40/s, then a burst enqueued by 8
// clients at once; it adds to row.
func loadRun(ctx context.Context, e *benchEnv, d idleDesign, round int, row *loadRow) error {
	const loadRate, burst = 40.0, 200
	row.design, row.rate, row.burst = d, loadRate, burst
	pf, err := startProcFleet(ctx, e, fmt.Sprintf("load-%s-%d", d.key, round), 1, d)
	if err != nil {
		return err
	}
	defer pf.stop()
	if err := sleepCtx(ctx, time.Second); err != nil {
		return err
	}
	type sent struct {
		id  string
		enq time.Time
	}
	var steady []sent
	for range max(e.o.loadN/loadRounds, 2) {
		if err := sleepCtx(ctx, time.Duration(rand.ExpFloat64()/loadRate*float64(time.Second))); err != nil {
			return err
		}
		enq := time.Now()
		job, err := pf.client.Enqueue(ctx, idleRequest("load"))
		if err != nil {
			return err
		}
		steady = append(steady, sent{job.TaskID, enq})
	}
	for _, s := range steady {
		t, err := pf.started(ctx, s.id, 30*time.Second)
		if err != nil {
			return err
		}
		row.steady = append(row.steady, msOf(t.Sub(s.enq)))
	}
	if _, err := pf.ended(ctx, steady[len(steady)-1].id, 30*time.Second); err != nil {
		return err
	}
	if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
		return err
	}

	jobs := make([]sent, burst)
	errs := make([]error, 8)
	first := time.Now()
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := c; i < burst; i += 8 {
				enq := time.Now()
				job, err := pf.client.Enqueue(ctx, idleRequest("burst"))
				if err != nil {
					errs[c] = err
					return
				}
				jobs[i] = sent{job.TaskID, enq}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var last time.Time
	for _, j := range jobs {
		s, err := pf.started(ctx, j.id, 60*time.Second)
		if err != nil {
			return err
		}
		end, err := pf.ended(ctx, j.id, 60*time.Second)
		if err != nil {
			return err
		}
		row.burstPick = append(row.burstPick, msOf(s.Sub(j.enq)))
		if end.After(last) {
			last = end
		}
	}
	row.throughput = append(row.throughput, float64(burst)/last.Sub(first).Seconds())
	return nil
}

// idlePDF is what the idle workers' stub renderer stores.
var idlePDF = []byte("%PDF-1.4\n% bench idle stub\n%%EOF\n")

// idleWorkerMain is the worker process of section 12: internal/worker wired
// as cmd/worker from the environment, with a stub renderer instead of
// Chromium (an idle Chromium is not what is measured, and ten of them would
// not fit the machine), printing when each task's handler starts and ends.
func idleWorkerMain() int {
	cfg, err := config.Load(os.Environ())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.AdminAddr = "" // ten processes cannot share one port (an empty ADMIN_ADDR takes the default)
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	note := func(what, id string) {
		mu.Lock()
		fmt.Fprintf(out, "%s %s %d\n", what, id, time.Now().UnixNano())
		_ = out.Flush()
		mu.Unlock()
	}
	mw := func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			id, _ := asynq.GetTaskID(ctx)
			note("TASK-START", id)
			err := next.ProcessTask(ctx, t)
			note("TASK-END", id)
			return err
		})
	}
	w := worker.New(cfg, worker.Options{Logger: logging.New(os.Stderr, cfg.LogLevel, cfg.LogFormat),
		Renderer: stubRenderer{pdf: idlePDF, pages: 1}, Middleware: []asynq.MiddlewareFunc{mw}})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	sctx, cancel := context.WithTimeout(ctx, worker.StartTimeout)
	err = w.Start(sctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		w.Shutdown()
		return 3
	}
	mu.Lock()
	fmt.Fprintln(out, "IDLE-WORKER-READY")
	_ = out.Flush()
	mu.Unlock()
	<-ctx.Done()
	w.Shutdown()
	return 0
}

func (r *idleResult) find(key string, workers int) *idleRow {
	for i := range r.idle {
		if r.idle[i].design.key == key && r.idle[i].workers == workers {
			return &r.idle[i]
		}
	}
	return nil
}

func (r *idleResult) findLoad(key string) *loadRow {
	for i := range r.load {
		if r.load[i].design.key == key {
			return &r.load[i]
		}
	}
	return nil
}

// rows are section 12's lines of the summary table: the new design against
// asynq's 1 s and the previous 10 ms default, same run.
func (r *idleResult) rows() []row {
	var rows []row
	cost := func(x *idleRow) string {
		return fmt.Sprintf("%s Redis cmds/s per worker (%s total); worker CPU %s %% of a core; redis-server %s %%",
			num(x.cmdsPerSec/float64(x.workers)), num(x.cmdsPerSec), x.cpuPerProc.mmm(""), num(100*x.redisCPU))
	}
	for _, n := range []int{1, 10} {
		nb, slow, fast := r.find("doorbell", n), r.find("asynq", n), r.find("10ms", n)
		if nb == nil {
			continue
		}
		who := "1 idle worker process"
		if n > 1 {
			who = fmt.Sprintf("%d idle worker processes", n)
		}
		var base []string
		for _, b := range []*idleRow{slow, fast} {
			if b != nil {
				base = append(base, b.design.label+": "+cost(b))
			}
		}
		target := fmt.Sprintf("≤ 20 cmds/s and ≤ 1 %% of a core per worker — %s",
			verdict(nb.cmdsPerSec/float64(n) <= 20 && nb.cpuPerProc.max() <= 1))
		if one := r.find("doorbell", 1); n > 1 && one != nil {
			target += fmt.Sprintf("; ≤ %d× one worker's cmds/s (%s×) — %s", n, num(nb.cmdsPerSec/one.cmdsPerSec),
				verdict(nb.cmdsPerSec <= float64(n)*one.cmdsPerSec))
		}
		rt := "—"
		if fast != nil {
			rt = fmt.Sprintf("cmds/s %s of 10 ms", ratio(nb.cmdsPerSec/fast.cmdsPerSec))
		}
		rows = append(rows, row{"12", "idle cost, " + who + ", " + nb.design.label, cost(nb), strings.Join(base, "; "), rt, target})

		base = base[:0]
		for _, b := range []*idleRow{slow, fast} {
			if b != nil {
				base = append(base, b.design.label+": "+b.pickAfterIO.pcts(" ms"))
			}
		}
		rt = "—"
		if slow != nil {
			rt = fmt.Sprintf("p50 %s · p99 %s of asynq 1 s", ratio(nb.pickAfterIO.pct(50)/slow.pickAfterIO.pct(50)), ratio(nb.pickAfterIO.pct(99)/slow.pickAfterIO.pct(99)))
		}
		rows = append(rows, row{"12", "↳ enqueue → handler start after 1–2 s idle, " + who, nb.pickAfterIO.pcts(" ms"), strings.Join(base, "; "), rt,
			"p50 ≤ 20 ms, p99 ≤ 50 ms — " + verdict(nb.pickAfterIO.pct(50) <= 20 && nb.pickAfterIO.pct(99) <= 50)})
	}
	if nb, fast := r.findLoad("doorbell"), r.findLoad("10ms"); nb != nil {
		var base []string
		for _, k := range []string{"asynq", "10ms"} {
			if b := r.findLoad(k); b != nil {
				base = append(base, fmt.Sprintf("%s: %s; bursts %s/s", b.design.label, b.steady.pcts(" ms"), b.throughput.mmm("")))
			}
		}
		rt, target := "—", "no worse than 10 ms (within 10 %, or 2 ms for the latencies: noise)"
		if fast != nil {
			rt = fmt.Sprintf("p50 %s · p99 %s · throughput %s of 10 ms", ratio(nb.steady.pct(50)/fast.steady.pct(50)),
				ratio(nb.steady.pct(99)/fast.steady.pct(99)), ratio(nb.throughput.median()/fast.throughput.median()))
			ok := nb.steady.pct(50) <= max(1.1*fast.steady.pct(50), fast.steady.pct(50)+2) &&
				nb.steady.pct(99) <= max(1.1*fast.steady.pct(99), fast.steady.pct(99)+2) && nb.throughput.median() >= 0.9*fast.throughput.median()
			target += " — " + verdict(ok)
		}
		rows = append(rows, row{"12", fmt.Sprintf("under load, 1 worker process, %s: enqueue → handler start at %.0f/s (Poisson); bursts of %d by 8 clients (%d rounds)",
			nb.design.label, nb.rate, nb.burst, len(nb.throughput)),
			fmt.Sprintf("%s; bursts %s exports/s (their pick-up, queue wait included: %s)", nb.steady.pcts(" ms"), nb.throughput.mmm(""), nb.burstPick.pcts(" ms")),
			strings.Join(base, "; "), rt, target})
	}
	return rows
}
