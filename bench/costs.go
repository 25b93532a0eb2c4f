package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// costsCheckInterval is the workers' TASK_CHECK_INTERVAL in section 10: an
// idle worker's polls are Redis commands too (one Lua call per queue per
// poll), and at the 10ms default they would outnumber an export's own by
// far. At 1s they are few, and the idle rate measured beside each scenario
// is subtracted.
const costsCheckInterval = time.Second

// redisStats is what INFO says about the commands a Redis server ran since
// its last CONFIG RESETSTAT, and its CPU so far.
type redisStats struct {
	calls   map[string]int64 // cmdstat_<name>:calls=…, without the measurement's own INFO and CONFIG
	cpu     time.Duration    // used_cpu_sys + used_cpu_user (not reset by RESETSTAT)
	usedMem int64            // used_memory
}

// readRedisStats reads INFO commandstats, cpu and memory in one call.
func readRedisStats(ctx context.Context, rdb redis.UniversalClient) (redisStats, error) {
	info, err := rdb.Info(ctx, "commandstats", "cpu", "memory").Result()
	if err != nil {
		return redisStats{}, err
	}
	s := redisStats{calls: map[string]int64{}}
	var cpuSec float64
	for line := range strings.SplitSeq(info, "\n") {
		line = strings.TrimSpace(line)
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(k, "cmdstat_"):
			name := strings.TrimPrefix(k, "cmdstat_")
			if name == "info" || strings.HasPrefix(name, "config|") {
				continue // the measurement's own
			}
			for f := range strings.SplitSeq(v, ",") {
				if n, ok := strings.CutPrefix(f, "calls="); ok {
					c, _ := strconv.ParseInt(n, 10, 64)
					s.calls[name] = c
				}
			}
		case k == "used_cpu_sys" || k == "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			cpuSec += f
		case k == "used_memory":
			s.usedMem, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	s.cpu = time.Duration(cpuSec * float64(time.Second))
	return s, nil
}

// serverWindow is what one Redis ran over a measured stretch: commands by
// name (counted from a CONFIG RESETSTAT) and its CPU.
type serverWindow struct {
	calls map[string]int64
	cpu   time.Duration
}

// The two Redis servers of section 10: the queues' (REDIS_URL) and the
// render locks' (LOCK_REDIS_URL).
const (
	queueRedis = iota
	lockRedis
)

// window is what both Redis servers ran over one measured stretch, and its
// wall time.
type window struct {
	srv  [2]serverWindow
	wall time.Duration
}

func (w window) total(i int) (n int64) {
	for _, c := range w.srv[i].calls {
		n += c
	}
	return n
}

// measure resets both servers' command statistics, runs f and returns what
// they ran meanwhile.
func measure(ctx context.Context, rdbs [2]redis.UniversalClient, f func() error) (window, error) {
	var before [2]redisStats
	for i, rdb := range rdbs {
		if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
			return window{}, err
		}
		var err error
		if before[i], err = readRedisStats(ctx, rdb); err != nil {
			return window{}, err
		}
	}
	t0 := time.Now()
	if err := f(); err != nil {
		return window{}, err
	}
	w := window{wall: time.Since(t0)}
	for i, rdb := range rdbs {
		after, err := readRedisStats(ctx, rdb)
		if err != nil {
			return window{}, err
		}
		w.srv[i] = serverWindow{calls: after.calls, cpu: after.cpu - before[i].cpu}
	}
	return w, nil
}

// costFigures are the Redis costs of one unit of work (an export, a pair, a
// cancel), net of the idle workers' own commands over the same wall time.
type costFigures struct {
	label string
	units int
	unit  string // what one unit is
	srv   [2]serverCost
	idle  float64 // of the window's commands, the share the idle rate explains
}

// serverCost is one Redis server's share of a unit.
type serverCost struct {
	calls   map[string]float64 // per unit, by command
	scripts float64            // eval + evalsha per unit
	total   float64            // every command per unit (Redis counts the commands a Lua script calls too)
	cpuUS   float64            // Redis CPU per unit, µs
}

func (c costFigures) total() float64 { return c.srv[queueRedis].total + c.srv[lockRedis].total }
func (c costFigures) cpuUS() float64 { return c.srv[queueRedis].cpuUS + c.srv[lockRedis].cpuUS }
func (c costFigures) scripts() float64 {
	return c.srv[queueRedis].scripts + c.srv[lockRedis].scripts
}

// net subtracts the idle rate over w's wall time and divides by units.
func net(label, unit string, units int, w, idle window) costFigures {
	c := costFigures{label: label, units: units, unit: unit}
	scale := w.wall.Seconds() / idle.wall.Seconds()
	var all, idleAll float64
	for i := range w.srv {
		sc := serverCost{calls: map[string]float64{}}
		names := map[string]bool{}
		for n := range w.srv[i].calls {
			names[n] = true
		}
		for n := range idle.srv[i].calls {
			names[n] = true
		}
		for n := range names {
			v := float64(w.srv[i].calls[n]) - scale*float64(idle.srv[i].calls[n])
			all += float64(w.srv[i].calls[n])
			idleAll += scale * float64(idle.srv[i].calls[n])
			v /= float64(units)
			if v > -0.05 && v < 0.05 {
				continue
			}
			sc.calls[n] = v
			sc.total += v
			if n == "eval" || n == "evalsha" || n == "evalsha_ro" || n == "eval_ro" {
				sc.scripts += v
			}
		}
		sc.cpuUS = (float64(w.srv[i].cpu.Microseconds()) - scale*float64(idle.srv[i].cpu.Microseconds())) / float64(units)
		c.srv[i] = sc
	}
	if all > 0 {
		c.idle = idleAll / all
	}
	return c
}

// top lists the commands of a unit, most first: "evalsha 6.0 · hget 3.0 …".
func (c serverCost) top(n int) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range c.calls {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].k < all[j].k
	})
	var parts []string
	for i, x := range all {
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, x.k+" "+num(x.v))
	}
	return strings.Join(parts, " · ")
}

// memFigures are the Redis bytes one export holds.
type memFigures struct {
	label                 string
	htmlBytes             int
	pendingKeys, doneKeys float64 // MEMORY USAGE sum over the database's keys, per export
	pendingUsed, doneUsed float64 // INFO memory used_memory delta, per export
	n                     int
}

// chromiumMem is what the Chromium processes of one worker occupied while
// rendering (sum over its processes of Pss, and of Rss, peak of samples
// every 100 ms).
type chromiumMem struct {
	idlePss, peakPss, peakRss int64
	goBytes                   uint64 // the bench process's Go runtime, all memory classes (worker and clients)
	samples                   int
	renders                   int
}

type costsResult struct {
	interval time.Duration
	idle     window
	idleRate [2]float64 // commands per second of one idle worker, per server
	idleCPU  [2]float64 // Redis CPU of one idle worker (and Redis's own cron), µs per second, per server
	// The same at the default TASK_CHECK_INTERVAL (a worker with a stub
	// renderer, after the others stopped).
	idleDefault                     time.Duration
	idleDefaultRate, idleDefaultCPU [2]float64
	scen                            []costFigures
	mem                             []memFigures
	chromium                        *chromiumMem
}

// scenarioCosts (10): the Redis commands and CPU of an export — a cache hit,
// a first render with one waiter, a cancel of a queued and of a running
// export — from INFO commandstats (reset with CONFIG RESETSTAT before each)
// and INFO cpu, net of what the idle worker polls over the same time; the
// Redis bytes of a pending and of a completed export; and the memory of a
// worker's Chromium while rendering. One in-process worker with a real
// Chromium, wired like cmd/worker, and the public exportclient (Enqueue,
// Wait, Cancel) as an API server uses it: the figures include the client's
// commands.
func scenarioCosts(ctx context.Context, e *benchEnv, rep *report) error {
	// Units per scenario, run in concurrent batches (as a loaded worker takes
	// them: one poll finds the next task at once), which keeps the idle
	// polls' share of the window small.
	c := &costsRun{ctx: ctx, e: e, nHits: 48, nPairs: 24, nCancels: 20, nMem: 40}
	if e.o.quick {
		c.nHits, c.nPairs, c.nCancels, c.nMem = 8, 4, 4, 8
	}
	c.res = &costsResult{interval: costsCheckInterval}
	rep.costs = c.res
	f, env, err := e.newFleet("costs")
	if err != nil {
		return err
	}
	defer f.stop()
	c.f = f
	// The render locks on a Redis of their own (LOCK_REDIS_URL), so that
	// each server's INFO says which side a command is on.
	locks, err := harness.StartRedis(ctx, filepath.Join(e.work, "redis-locks"), 0)
	if err != nil {
		return err
	}
	defer locks.Stop()
	c.env = append(env, "LOCK_REDIS_URL="+locks.URL(0))
	c.lockRDB = redis.NewClient(&redis.Options{Addr: locks.Addr()})
	defer c.lockRDB.Close()
	if err := f.startInProcWorkers(ctx, c.env, "costs", 1, workerSpec{checkInterval: costsCheckInterval}); err != nil {
		return err
	}
	c.rdb = [2]redis.UniversalClient{f.rdb, c.lockRDB}
	for _, step := range []func() error{c.warmUpAndIdle, c.hits, c.pairs, c.cancelsRunning, c.cancelsQueued, c.memory, c.chromiumMemory, c.idleAtDefault} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// costsRun is one run of scenario 10: its fleet, the two Redis servers'
// clients (queue, lock) and the units per scenario.
type costsRun struct {
	ctx                           context.Context
	e                             *benchEnv
	f                             *fleet
	env                           []string
	lockRDB                       *redis.Client
	rdb                           [2]redis.UniversalClient
	res                           *costsResult
	hitReq                        exportclient.Request
	nHits, nPairs, nCancels, nMem int
}

func (c *costsRun) wait(id string) (exportclient.Status, error) {
	wctx, cancel := context.WithTimeout(c.ctx, 2*time.Minute)
	defer cancel()
	return c.f.client.Wait(wctx, id, time.Second)
}

// exportOne enqueues req and waits for it to complete.
func (c *costsRun) exportOne(req exportclient.Request) (exportclient.Status, error) {
	job, err := c.f.client.Enqueue(c.ctx, req)
	if err != nil {
		return exportclient.Status{}, err
	}
	st, err := c.wait(job.TaskID)
	if err == nil && st.State != exportclient.StateCompleted {
		err = fmt.Errorf("%w: export %s is %s: %s", errScenario, job.TaskID, st.State, st.Error)
	}
	return st, err
}

// idle measures both servers over 10 s of the worker idling.
func (c *costsRun) idle() (window, error) {
	return measure(c.ctx, c.rdb, func() error {
		select {
		case <-c.ctx.Done():
			return c.ctx.Err()
		case <-time.After(10 * time.Second):
			return nil
		}
	})
}

// scenario measures n runs of one, k at a time, and adds its row net of
// the idle worker's rate.
func (c *costsRun) scenario(what, label, unit string, n, k int, one func() error) error {
	w, err := measure(c.ctx, c.rdb, func() error { return inBatches(n, k, one) })
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	c.res.add(net(label, unit, n, w, c.res.idle))
	return nil
}

// warmUpAndIdle warms up (not counted: Chromium's renderer, the Lua
// scripts, the client's announcement subscription), then measures the
// idle worker's rate that every scenario is net of.
func (c *costsRun) warmUpAndIdle() error {
	c.hitReq = c.e.manualRequest(freshVersion("costs-hit"))
	for range 2 {
		if _, err := c.exportOne(c.hitReq); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	res := c.res
	var err error
	if res.idle, err = c.idle(); err != nil {
		return err
	}
	for i := range c.rdb {
		res.idleRate[i] = float64(res.idle.total(i)) / res.idle.wall.Seconds()
		res.idleCPU[i] = float64(res.idle.srv[i].cpu.Microseconds()) / res.idle.wall.Seconds()
	}
	logf("   idle worker (TASK_CHECK_INTERVAL=%s): %.1f + %.1f commands/s, Redis CPU %.0f + %.0f µs/s (queue + lock Redis)",
		costsCheckInterval, res.idleRate[0], res.idleRate[1], res.idleCPU[0], res.idleCPU[1])
	return nil
}

// hits: a cache hit, the artifact stored.
func (c *costsRun) hits() error {
	return c.scenario("cache hits", "cache hit (artifact stored), 8 at a time", "export", c.nHits, 8, func() error {
		st, err := c.exportOne(c.hitReq)
		if err != nil {
			return err
		}
		if st.Result == nil || st.Result.Rendered {
			return fmt.Errorf("%w: a cache hit rendered", errScenario)
		}
		return nil
	})
}

// pairs: a first render with one waiter, two requests for a fresh
// artifact at once; one renders, the other waits at the render gate and
// reuses it.
func (c *costsRun) pairs() error {
	return c.scenario("first renders", "first render with one waiter (2 requests, 1 render), 4 pairs at a time", "pair", c.nPairs, 4, func() error {
		req := c.e.manualRequest(freshVersion("costs-pair"))
		var sts [2]exportclient.Status
		var errs [2]error
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() { sts[i], errs[i] = c.exportOne(req) })
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			return err
		}
		if sts[0].Result.Rendered == sts[1].Result.Rendered {
			return fmt.Errorf("%w: a pair rendered %v and %v, want one render", errScenario, sts[0].Result.Rendered, sts[1].Result.Rendered)
		}
		return nil
	})
}

// cancelsRunning: a cancel of a running export, once its render began.
func (c *costsRun) cancelsRunning() error {
	return c.scenario("cancels of running exports", "cancel of a running export (enqueue, render begun, Cancel), 2 at a time", "export", c.nCancels, 2, func() error {
		job, err := c.f.client.Enqueue(c.ctx, c.e.manualRequest(freshVersion("costs-cancel-run")))
		if err != nil {
			return err
		}
		deadline := time.Now().Add(time.Minute)
		for {
			if _, ok := c.f.rec.get(c.f.rec.renderStart, job.TaskID); ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: task %s never began rendering", errScenario, job.TaskID)
			}
			time.Sleep(2 * time.Millisecond)
		}
		st, err := c.f.client.Cancel(c.ctx, job.TaskID)
		if errors.Is(err, exportclient.ErrFinal) {
			return nil // it finished first: counted all the same
		}
		if err != nil {
			return err
		}
		if st.State != exportclient.StateCanceled {
			return fmt.Errorf("%w: canceled %s is %s", errScenario, job.TaskID, st.State)
		}
		return nil
	})
}

// cancelsQueued: a cancel of a queued export. The queue is paused, so the
// worker polls it without taking tasks; the idle rate is measured paused
// too. The queue stays paused for memory.
func (c *costsRun) cancelsQueued() error {
	if err := c.f.insp.PauseQueue("default"); err != nil {
		return err
	}
	pausedIdle, err := c.idle()
	if err != nil {
		return err
	}
	w, err := measure(c.ctx, c.rdb, func() error {
		for range c.nCancels {
			job, err := c.f.client.Enqueue(c.ctx, c.e.manualRequest(freshVersion("costs-cancel-queued")))
			if err != nil {
				return err
			}
			st, err := c.f.client.Cancel(c.ctx, job.TaskID)
			if err != nil {
				return err
			}
			if st.State != exportclient.StateCanceled {
				return fmt.Errorf("%w: canceled %s is %s", errScenario, job.TaskID, st.State)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cancels of queued exports: %w", err)
	}
	c.res.add(net("cancel of a queued export (enqueue, Cancel), one at a time", "export", c.nCancels, w, pausedIdle))
	return nil
}

// memory: the Redis bytes of a pending and a completed export, the sample
// manual (100 KiB, stored beside the task) and a 1 KiB page (inside it),
// on the paused queue; it unpauses the queue when done.
func (c *costsRun) memory() error {
	small := "<!doctype html><title>small</title>" + strings.Repeat("<p>A short page of a manual.</p>\n", 30)
	for _, d := range []struct {
		label, html string
		wait        string
	}{
		{"sample manual (" + strconv.Itoa(len(c.e.manual)>>10) + " KiB HTML, beside the task)", c.e.manual, "window.__PDF_READY__===true"},
		{"small page (" + strconv.Itoa(len(small)>>10) + " KiB HTML, inside the task)", small, ""},
	} {
		m, err := costsMemory(c.ctx, c.f, c.lockRDB, c.nMem, d.label, d.html, d.wait, c.wait)
		if err != nil {
			return fmt.Errorf("memory, %s: %w", d.label, err)
		}
		c.res.mem = append(c.res.mem, m)
		logf("   %s: %.2f KiB pending, %.2f KiB completed (MEMORY USAGE); used_memory %.2f / %.2f KiB",
			d.label, m.pendingKeys/1024, m.doneKeys/1024, m.pendingUsed/1024, m.doneUsed/1024)
	}
	return c.f.insp.UnpauseQueue("default")
}

// chromiumMemory: the worker's Chromium while rendering two distinct Go
// specifications at once (RENDER_CONCURRENCY=2, the heaviest document of
// this report), sampled every 100 ms.
func (c *costsRun) chromiumMemory() error {
	goSpec, _, err := goSpecHTML(c.ctx)
	if err != nil {
		return err
	}
	cm := &chromiumMem{}
	c.res.chromium = cm
	cm.idlePss, _ = chromiumMemory()
	stopSampling := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			pss, rss := chromiumMemory()
			cm.peakPss, cm.peakRss = max(cm.peakPss, pss), max(cm.peakRss, rss)
			cm.samples++
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	})
	err = c.goSpecPairs(goSpec, 3, cm)
	close(stopSampling)
	sampled.Wait()
	if err != nil {
		return err
	}
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(sample)
	cm.goBytes = sample[0].Value.Uint64()
	logf("   Chromium while rendering 2 Go specifications at once: Pss peak %d MiB (idle %d MiB), Rss sum peak %d MiB; Go runtime of the bench process %d MiB",
		cm.peakPss>>20, cm.idlePss>>20, cm.peakRss>>20, cm.goBytes>>20)
	return nil
}

// goSpecPairs exports the Go specification two at a time, rounds times,
// counting the renders in cm.
func (c *costsRun) goSpecPairs(goSpec string, rounds int, cm *chromiumMem) error {
	for range rounds {
		var errs [2]error
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				_, errs[i] = c.exportOne(exportclient.Request{ManualID: "costs-gospec", Version: freshVersion("mem"), HTML: goSpec})
			})
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			return fmt.Errorf("renders of the Go specification: %w", err)
		}
		cm.renders += 2
	}
	return nil
}

// idleAtDefault: an idle worker at the default TASK_CHECK_INTERVAL, the
// polls a fleet sends whatever its load.
func (c *costsRun) idleAtDefault() error {
	for _, w := range c.f.workers {
		w.Shutdown()
	}
	c.f.workers = nil
	if err := c.f.startInProcWorkers(c.ctx, c.env, "costs-idle", 1, workerSpec{stub: &stubRenderer{}}); err != nil {
		return err
	}
	res := c.res
	res.idleDefault = defaultCheckInterval
	idleDefault, err := c.idle()
	if err != nil {
		return err
	}
	for i := range c.rdb {
		res.idleDefaultRate[i] = float64(idleDefault.total(i)) / idleDefault.wall.Seconds()
		res.idleDefaultCPU[i] = float64(idleDefault.srv[i].cpu.Microseconds()) / idleDefault.wall.Seconds()
	}
	logf("   idle worker (TASK_CHECK_INTERVAL=%s): %.0f + %.1f commands/s, Redis CPU %.0f + %.0f µs/s (queue + lock Redis)",
		defaultCheckInterval, res.idleDefaultRate[0], res.idleDefaultRate[1], res.idleDefaultCPU[0], res.idleDefaultCPU[1])
	return nil
}

// inBatches runs f n times, k at a time (the last batch may be smaller).
func inBatches(n, k int, f func() error) error {
	for done := 0; done < n; done += k {
		errs := make([]error, min(k, n-done))
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = f() })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

func (r *costsResult) add(c costFigures) {
	r.scen = append(r.scen, c)
	logf("   %s: %s commands per %s (queue Redis %s, lock Redis %s; %s scripts; idle share of the window %.0f %%), Redis CPU %s µs per %s (queue %s, lock %s); queue: %s; lock: %s",
		c.label, num(c.total()), c.unit, num(c.srv[queueRedis].total), num(c.srv[lockRedis].total), num(c.scripts()), 100*c.idle,
		num(c.cpuUS()), c.unit, num(c.srv[queueRedis].cpuUS), num(c.srv[lockRedis].cpuUS), c.srv[queueRedis].top(8), c.srv[lockRedis].top(6))
}

// costsMemory enqueues n exports of html on the paused queue "default",
// then resumes it and waits for them: bytes per export pending and
// completed. The workers' own keys (server and worker heartbeats) are not
// counted; the render gate's outcome records (LOCK_GRACE) are.
func costsMemory(ctx context.Context, f *fleet, lockRDB redis.UniversalClient, n int, label, html, waitFor string, wait func(string) (exportclient.Status, error)) (memFigures, error) {
	m := memFigures{label: label, htmlBytes: len(html), n: n}
	mem := func() (keys, used int64, err error) { // both servers
		for _, rdb := range []redis.UniversalClient{f.rdb, lockRDB} {
			k, err := exportKeysMemory(ctx, rdb)
			if err != nil {
				return 0, 0, err
			}
			s, err := readRedisStats(ctx, rdb)
			if err != nil {
				return 0, 0, err
			}
			keys, used = keys+k, used+s.usedMem
		}
		return keys, used, nil
	}
	k0, u0, err := mem()
	if err != nil {
		return m, err
	}
	var ids []string
	for i := range n {
		// A distinct document per export (no two share a stored copy).
		doc := html + fmt.Sprintf("\n<!-- copy %d -->\n", i)
		job, err := f.client.Enqueue(ctx, exportclient.Request{ManualID: "costs-mem", Version: freshVersion("mem"), HTML: doc,
			Options: exportclient.Options{WaitFor: waitFor}})
		if err != nil {
			return m, err
		}
		ids = append(ids, job.TaskID)
	}
	k1, u1, err := mem()
	if err != nil {
		return m, err
	}
	if err := f.insp.UnpauseQueue("default"); err != nil {
		return m, err
	}
	for _, id := range ids {
		if st, err := wait(id); err != nil || st.State != exportclient.StateCompleted {
			return m, fmt.Errorf("export %s: %s %v", id, st.State, err)
		}
	}
	if err := f.insp.PauseQueue("default"); err != nil {
		return m, err
	}
	k2, u2, err := mem()
	if err != nil {
		return m, err
	}
	m.pendingKeys, m.doneKeys = float64(k1-k0)/float64(n), float64(k2-k0)/float64(n)
	m.pendingUsed, m.doneUsed = float64(u1-u0)/float64(n), float64(u2-u0)/float64(n)
	return m, nil
}

// exportKeysMemory is keysMemory without the keys a running worker keeps
// for itself (asynq's server and worker heartbeats), which come and go.
func exportKeysMemory(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	var total int64
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if strings.HasPrefix(k, keyspace.AsynqServers) || strings.HasPrefix(k, keyspace.AsynqWorkers) {
			continue
		}
		n, err := rdb.MemoryUsage(ctx, k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		total += n
	}
	return total, iter.Err()
}

// chromiumMemory sums Pss and Rss (bytes) over the Chromium processes below
// this one (the in-process workers' browsers).
func chromiumMemory() (pss, rss int64) {
	for _, pid := range proctree.Descendants(os.Getpid()) {
		cmd := proctree.Cmdline(pid)
		if len(cmd) == 0 || !strings.Contains(cmd[0], "chrom") {
			continue
		}
		m := procMemory(pid)
		pss += m.pss
		rss += m.rss
	}
	return pss, rss
}

// rows are the summary lines of section 10.
func (r *costsResult) rows() []row {
	var rows []row
	idle := func(d time.Duration, rate, cpu [2]float64, what string) row {
		return row{"10", fmt.Sprintf("idle worker, TASK_CHECK_INTERVAL=%s (%s)", d, what),
			fmt.Sprintf("%s commands/s, Redis CPU %s µs/s", num(rate[0]+rate[1]), num(cpu[0]+cpu[1])),
			fmt.Sprintf("queue Redis %s/s, lock Redis %s/s", num(rate[0]), num(rate[1])), "—", "figures"}
	}
	rows = append(rows, idle(r.interval, r.idleRate, r.idleCPU, "subtracted below"))
	if r.idleDefault > 0 {
		rows = append(rows, idle(r.idleDefault, r.idleDefaultRate, r.idleDefaultCPU, "the worker default"))
	}
	for _, c := range r.scen {
		rows = append(rows, row{"10", "Redis per " + c.unit + ": " + c.label,
			fmt.Sprintf("%s commands (%s Lua scripts), Redis CPU %s µs", num(c.total()), num(c.scripts()), num(c.cpuUS())),
			fmt.Sprintf("queue Redis %s commands, %s µs · lock Redis %s commands, %s µs", num(c.srv[queueRedis].total), num(c.srv[queueRedis].cpuUS),
				num(c.srv[lockRedis].total), num(c.srv[lockRedis].cpuUS)),
			fmt.Sprintf("idle share %.0f %%", 100*c.idle), "figures"})
	}
	for _, m := range r.mem {
		rows = append(rows, row{"10", "Redis bytes per export, " + m.label,
			fmt.Sprintf("pending %s KiB · completed %s KiB (MEMORY USAGE)", num(m.pendingKeys/1024), num(m.doneKeys/1024)),
			fmt.Sprintf("used_memory delta: pending %s KiB · completed %s KiB", num(m.pendingUsed/1024), num(m.doneUsed/1024)),
			"—", "figures"})
	}
	if c := r.chromium; c != nil {
		rows = append(rows, row{"10", "Chromium of one worker, 2 Go specifications rendering at once",
			fmt.Sprintf("Pss peak %d MiB · Rss sum peak %d MiB", c.peakPss>>20, c.peakRss>>20),
			fmt.Sprintf("idle (warm) Pss %d MiB", c.idlePss>>20), "—", "figures"})
	}
	return rows
}

// markdown is the per-export Redis costs section of the report: the full
// command counts.
func (r *costsResult) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## 10. Per-export Redis costs\n\n")
	w("One in-process worker (real Chromium, `TASK_CHECK_INTERVAL=%s`, the render locks on a Redis of their own: `LOCK_REDIS_URL`) ", r.interval)
	w("and the public `exportclient` (Enqueue, Wait, Cancel): commands counted by `INFO commandstats` of each server from a `CONFIG RESETSTAT` ")
	w("before each scenario, Redis CPU from `INFO cpu`, both net of the idle worker's rate over the same wall time ")
	w("(%s + %s commands/s, %s + %s µs/s of Redis CPU, queue + lock Redis; most of that CPU is Redis's own cron). ",
		num(r.idleRate[0]), num(r.idleRate[1]), num(r.idleCPU[0]), num(r.idleCPU[1]))
	w("Redis counts the commands a Lua script calls as well as the script itself. With one Redis for both, add the two columns.\n\n")
	w("| scenario | per | commands: queue Redis | lock Redis | Lua scripts | Redis CPU µs: queue | lock | by command, queue Redis | by command, lock Redis |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.scen {
		q, l := c.srv[queueRedis], c.srv[lockRedis]
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(c.label), c.unit, num(q.total), num(l.total), num(c.scripts()),
			num(q.cpuUS), num(l.cpuUS), mdCell(q.top(-1)), mdCell(l.top(-1)))
	}
	if r.idleDefault > 0 {
		w("\nAn idle worker at the default `TASK_CHECK_INTERVAL=%s` (after the others stopped; a stub renderer): %s commands/s on the queue Redis ",
			r.idleDefault, num(r.idleDefaultRate[0]))
		w("and %s on the lock Redis, %s + %s µs/s of Redis CPU: a fleet sends this per idle worker whatever its load.\n",
			num(r.idleDefaultRate[1]), num(r.idleDefaultCPU[0]), num(r.idleDefaultCPU[1]))
	}
	if len(r.mem) > 0 {
		w("\n| document | exports | pending, MEMORY USAGE | completed, MEMORY USAGE | pending, used_memory | completed, used_memory |\n|---|---|---|---|---|---|\n")
		for _, m := range r.mem {
			w("| %s | %d | %s KiB | %s KiB | %s KiB | %s KiB |\n", mdCell(m.label), m.n, num(m.pendingKeys/1024), num(m.doneKeys/1024),
				num(m.pendingUsed/1024), num(m.doneUsed/1024))
		}
	}
	if c := r.chromium; c != nil {
		w("\nChromium of the worker while %d Go specifications rendered two at a time: Pss (proportional set size, shared pages split) peak %d MiB, ", c.renders, c.peakPss>>20)
		w("Rss summed over its processes peak %d MiB (shared pages counted per process), warm and idle before %d MiB Pss; %d samples every 100 ms. ", c.peakRss>>20, c.idlePss>>20, c.samples)
		w("The Go runtime of the whole bench process (worker and clients) held %d MiB at the end.\n", c.goBytes>>20)
	}
	return b.String()
}
