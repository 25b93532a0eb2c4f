// Command bench is the benchmark report of pdfexport (`make bench`): it
// starts a private redis-server, real worker binaries and in-process workers
// wired exactly like cmd/worker, measures what the README and docs/ claim (one render
// for K duplicates, pick-up latency, cache hits, pipeline overhead, a long
// document) against baselines measured in the same run, runs the lock and
// render Go benchmarks as a subprocess, prints a table and writes
// BENCHMARKS.md. Figures are reported, never asserted; a scenario that errors
// makes the program exit 1 and leaves BENCHMARKS.md untouched.
//
//	go run ./bench [-runs 5] [-quick] [-out BENCHMARKS.md] [-bin bin]
//
// Everything it starts (redis-server, worker processes, Chromium, the go test
// subprocess and whatever that starts) is stopped on return, on error and on
// SIGINT/SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// options are the command-line settings of one benchmark run.
type options struct {
	runs            int           // repetitions of each measured scenario
	quick           bool          // fewer runs and samples: validates the harness in ~2-3 min
	out             string        // report file
	bin             string        // directory with worker and enqueue binaries (make build)
	manual          string        // the standard document
	k               int           // duplicate requests
	workers         int           // worker processes for the dedup scenario
	pickN           int           // pick-up latency samples at the default TASK_CHECK_INTERVAL
	pickSlowN       int           // pick-up latency samples at asynq's default 1s
	hitN            int           // cache-hit samples
	goBench         bool          // run the lock and render Go benchmarks
	renderBench     string        // -benchtime of the render benchmarks
	renderCount     int           // -count of the render benchmarks
	goBenchLimit    time.Duration // bound on all go test invocations together
	keep            bool          // keep the work directory (logs, PDFs)
	only            string        // run only these scenarios (comma-separated keys), for iterating
	idleN           int           // pick-up samples after idle, per design and fleet size (section 12)
	fairnessRounds  int           // section 11's rounds per cell
	fairnessFleets  string        // section 11's worker counts, comma-separated
	fairnessOneLane bool          // section 11 also measures one lane (BATCH_QUEUES=)
	manuals         string        // section M's manuals, comma-separated: node, python
	idleWindow      time.Duration // how long idle cost is measured, per design and fleet size
	loadN           int           // pick-up samples under load, per design
	command         string        // how this run was invoked, for the report
}

// scenario is one section of the report: its -only key, its name in the
// log, and what measures it.
type scenario struct {
	key, name string
	f         func(context.Context, *benchEnv, *report) error
}

// scenarios are the report's sections in the order they run; -only names
// them by key.
var scenarios = []scenario{
	{"single", "pipeline overhead, long document, cache-hit breakdown (1 in-process worker)", scenarioSingleWorker},
	{"pickup", "enqueue → render start latency (default interval vs asynq's 1s)", scenarioPickup},
	{"dedup", "K duplicates, in-process workers, gate vs no gate", scenarioDedupInProcess},
	{"binaries", "K duplicates and cache hits on worker processes (bin/worker)", scenarioBinaries},
	{"capacity", "Redis capacity of inline HTML, enqueue latency of 2 MiB", scenarioCapacity},
	{"delivery", "the way back to the client: CLI cache hits, long-poll, Wait", scenarioDelivery},
	{"distinct", "distinct documents: bin/worker vs the bare tab of a peer", scenarioDistinct},
	{"fairness", "interactive exports during a catalogue re-render: batch lane vs one lane", scenarioFairness},
	{"costs", "per-export Redis costs: commands, CPU and bytes of a hit, a render, a cancel", scenarioCosts},
	{"docopts", "document options: metadata, watermark, encryption vs the plain export", scenarioDocOptions},
	{"idle", "idle cost and pick-up after idle: doorbell vs polling every 1 s and 10 ms", scenarioIdle},
	{"manual", "a whole manual from chapters (Node.js docs) vs all.html and a peer's per-page merge", scenarioManual},
	{"links", "reader links: stored PDFs from one bin/api vs http.FileServer; POST answered from storage", scenarioLinks},
	{"compat", "Gotenberg's HTML route on bin/api vs the real Gotenberg (with -gotenberg)", scenarioCompat},
	{"gops", "Gotenberg's screenshot, split and stamp routes, one fresh caller, vs the real Gotenberg (with -gotenberg)", scenarioGotenbergOps},
}

// scenarioKeys lists the scenarios' keys.
func scenarioKeys() string {
	keys := make([]string, len(scenarios))
	for i, s := range scenarios {
		keys[i] = s.key
	}
	return strings.Join(keys, ", ")
}

// unknownScenarios lists the names of only that no scenario has.
func unknownScenarios(only string) []string {
	var unknown []string
	for _, name := range strings.Split(only, ",") {
		if !slices.ContainsFunc(scenarios, func(s scenario) bool { return s.key == name }) {
			unknown = append(unknown, name)
		}
	}
	return unknown
}

func main() {
	if os.Getenv(idleWorkerEnv) == "1" { // a worker process of section 12
		os.Exit(idleWorkerMain())
	}
	if os.Getenv(fileServerEnv) != "" { // the file server of section L
		os.Exit(fileServerMain())
	}
	o := options{}
	flag.IntVar(&o.runs, "runs", 5, "repetitions of each scenario (medians and min–max over these)")
	flag.BoolVar(&o.quick, "quick", false, "quick mode: 2 runs, fewer latency samples, shorter Go benchmarks (harness check, not for figures)")
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "report file to write (only when every scenario succeeded)")
	flag.StringVar(&o.bin, "bin", "bin", "directory holding the worker binary built by `make build`")
	flag.StringVar(&o.manual, "manual", "examples/manual.html", "standard document (the 22-page sample manual)")
	flag.IntVar(&o.k, "k", 20, "duplicate export requests in the dedup scenario")
	flag.IntVar(&o.workers, "workers", 3, "worker processes in the dedup scenario")
	flag.IntVar(&o.pickN, "pickup-samples", 150, "enqueue→render-start samples at the default TASK_CHECK_INTERVAL")
	flag.IntVar(&o.pickSlowN, "pickup-samples-1s", 50, "enqueue→render-start samples at asynq's default 1s")
	flag.IntVar(&o.hitN, "hit-samples", 150, "cache-hit end-to-end samples per fleet")
	flag.BoolVar(&o.goBench, "gobench", true, "run the lock and render Go benchmarks (go test -bench) as a subprocess")
	flag.StringVar(&o.renderBench, "render-benchtime", "3x", "-benchtime of the render benchmarks")
	flag.IntVar(&o.renderCount, "render-count", 1, "-count of the render benchmarks")
	flag.DurationVar(&o.goBenchLimit, "gobench-timeout", 6*time.Minute, "bound on the go test subprocesses together")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (worker logs, PDFs) after the run")
	flag.StringVar(&o.only, "only", "", "run only these scenarios, comma-separated: single, pickup, dedup, binaries, capacity, delivery, distinct, fairness, costs, docopts, idle, manual, links, compat, gops (pickup and capacity need single); the report is then partial and written to -out all the same")
	flag.IntVar(&o.fairnessRounds, "fairness-rounds", 3, "section 11: rounds per design and fleet size (each: interactive idle, batch alone, batch with interactive); every round must meet the targets")
	flag.StringVar(&o.manuals, "manuals", "node,python", "section M: the manuals measured, comma-separated: node (the Node.js docs, with all.html, --site and 2 workers), python (the Python tutorial, a Sphinx manual of short chapters)")
	flag.StringVar(&o.fairnessFleets, "fairness-fleets", "1,2", "section 11: the worker process counts measured, comma-separated")
	flag.BoolVar(&o.fairnessOneLane, "fairness-one-lane", true, "section 11: also measure one lane (BATCH_QUEUES=: every queue in one asynq server and one Chromium), the figures beside the goal")
	flag.IntVar(&o.idleN, "idle-samples", 20, "section 12: pick-up samples after 1-2 s of idle, per design and fleet size")
	flag.DurationVar(&o.idleWindow, "idle-window", 20*time.Second, "section 12: how long the idle cost of 10 workers is measured, per design (twice that for 1 worker)")
	flag.IntVar(&o.loadN, "load-samples", 200, "section 12: pick-up samples under load (Poisson arrivals at 40/s), per design, over its rounds")
	flag.Parse()
	o.command = strings.TrimSpace("go run ./bench " + strings.Join(os.Args[1:], " "))
	if o.quick {
		o.runs = min(o.runs, 2)
		o.pickN = min(o.pickN, 40)
		o.pickSlowN = min(o.pickSlowN, 12)
		o.hitN = min(o.hitN, 40)
		o.idleN = min(o.idleN, 8)
		o.fairnessRounds = min(o.fairnessRounds, 1)
		o.idleWindow = min(o.idleWindow, 5*time.Second)
		o.loadN = min(o.loadN, 60)
		o.renderBench = "1x"
		o.renderCount = 1
	}
	if o.only != "" {
		// An unknown name would run nothing and still write the (empty)
		// report over -out.
		if unknown := unknownScenarios(o.only); len(unknown) > 0 {
			fmt.Fprintf(os.Stderr, "bench: -only names no scenario %q (known: %s)\n", unknown, scenarioKeys())
			os.Exit(2)
		}
	}
	if o.runs < 1 || o.k < 2 || o.workers < 1 || o.pickN < 2 || o.pickSlowN < 2 || o.hitN < 2 || o.idleN < 2 || o.loadN < 2 || o.fairnessRounds < 1 || o.idleWindow < time.Second {
		fmt.Fprintln(os.Stderr, "bench: -runs ≥ 1, -k ≥ 2, -workers ≥ 1, -fairness-rounds ≥ 1 and ≥ 2 samples are required")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	rep, err := run(ctx, o)
	total := time.Since(start)
	if rep != nil {
		rep.total = total
		fmt.Println()
		fmt.Print(rep.text())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nbench: FAILED after %.0fs: %v\n(%s not written)\n", total.Seconds(), err, o.out)
		stop()
		os.Exit(1)
	}
	if err := os.WriteFile(o.out, []byte(rep.markdown()), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "bench: writing %s: %v\n", o.out, err)
		os.Exit(1)
	}
	abs, _ := filepath.Abs(o.out)
	fmt.Printf("\nbench: wrote %s in %.0fs total\n", abs, total.Seconds())
	if total > 10*time.Minute {
		fmt.Fprintf(os.Stderr, "bench: warning: the run took %.0fs, over the 10-minute budget\n", total.Seconds())
	}
}

// run measures every scenario. The report is returned even on error, with
// what was measured so far.
func run(ctx context.Context, o options) (rep *report, err error) {
	var cl cleanups
	defer cl.run()

	manual, err := os.ReadFile(o.manual)
	if err != nil {
		return nil, fmt.Errorf("reading the standard document: %w", err)
	}
	work, err := os.MkdirTemp("", "pdfexport-bench-")
	if err != nil {
		return nil, err
	}
	var keepWork atomic.Bool
	cl.add(func() {
		if o.keep || keepWork.Load() || (err != nil && ctx.Err() == nil) {
			fmt.Fprintf(os.Stderr, "bench: work directory (logs, PDFs) kept at %s\n", work)
			return
		}
		_ = os.RemoveAll(work)
	})

	rep = &report{opts: o, started: time.Now()}
	rep.machine = describeMachine(ctx)
	rep.machine.busyStart = cpuBusy(ctx, 3*time.Second)
	logf("machine: %s; CPU busy with other work: %.0f %%", rep.machine.oneLine(), 100*rep.machine.busyStart)

	step := func(name string, f func() error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t := time.Now()
		logf("── %s", name)
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		logf("   %s done in %.1fs", name, time.Since(t).Seconds())
		return nil
	}

	if o.goBench {
		if err := step("Go benchmarks (lock, render)", func() error { return runGoBenchmarks(ctx, o, rep) }); err != nil {
			return rep, err
		}
	}

	redisSrv, err := harness.StartRedis(ctx, filepath.Join(work, "redis"), 0, "--databases", "128")
	if err != nil {
		return rep, err
	}
	cl.add(redisSrv.Stop)
	logf("redis-server %s on %s", redisSrv.Version, redisSrv.Addr())
	rep.machine.redis = redisSrv.Version

	env := &benchEnv{o: o, work: work, redis: redisSrv, manual: string(manual), keepWork: &keepWork}
	for _, s := range scenarios {
		if o.only != "" && !slices.Contains(strings.Split(o.only, ","), s.key) {
			continue
		}
		if err := step(s.name, func() error { return s.f(ctx, env, rep) }); err != nil {
			return rep, err
		}
	}
	rep.machine.loadEnd = loadAvg()
	redisSrv.Stop()
	rep.machine.busyEnd = cpuBusy(ctx, 3*time.Second)
	return rep, nil
}

// cleanups run in reverse order of registration, once.
type cleanups struct{ fns []func() }

func (c *cleanups) add(f func()) { c.fns = append(c.fns, f) }

func (c *cleanups) run() {
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
	c.fns = nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

var errScenario = errors.New("scenario check failed")
