package worker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/queue/doorbell"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// starts records when the handler of each task began.
type starts struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *starts) middleware(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		if id, ok := asynq.GetTaskID(ctx); ok {
			s.mu.Lock()
			if _, seen := s.at[id]; !seen {
				s.at[id] = time.Now()
			}
			s.mu.Unlock()
		}
		return next.ProcessTask(ctx, t)
	})
}

// await returns when taskID's handler started, failing the test after d.
func (s *starts) await(t *testing.T, taskID string, d time.Duration) time.Time {
	t.Helper()
	var at time.Time
	testsupport.Eventually(t, d, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		started, ok := s.at[taskID]
		at = started
		return testsupport.Unless(ok, "task %s not started", taskID)
	})
	return at
}

// sample reads a counter of w's metrics: the series whose one label has
// value label ("" for a counter without labels); 0 if it does not exist.
func sample(t *testing.T, w *Worker, name, label string) float64 {
	t.Helper()
	mfs, err := w.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if l := m.GetLabel(); (label == "" && len(l) == 0) || (len(l) == 1 && l[0].GetValue() == label) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// stubPDF is what the stub renderer stores: the handler does not parse it.
var stubPDF = []byte("%PDF-1.4\n% stub\n%%EOF\n")

// idleWorker starts a worker on redisURL polling every interval when idle,
// with a stub renderer, and records its task starts.
func idleWorker(t *testing.T, redisURL string, interval time.Duration) (*Worker, *starts) {
	t.Helper()
	cfg := testConfig(t, redisURL)
	cfg.TaskCheckInterval = interval
	s := &starts{at: map[string]time.Time{}}
	w := startWorker(t, cfg, Options{Renderer: stubRenderer{pdf: stubPDF}, Middleware: []asynq.MiddlewareFunc{s.middleware}})
	return w, s
}

// TestWorker_PicksUpAtOnceAfterIdle: a worker that found its queues empty
// and polls only every second still starts an export enqueued through
// exportclient within milliseconds: the enqueue rings the doorbell.
func TestWorker_PicksUpAtOnceAfterIdle(t *testing.T) {
	// Serial (no t.Parallel): its pick-up latencies are real-time bounds.
	redis := testsupport.StartRedis(t)
	w, s := idleWorker(t, redis.URL(), time.Second)
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	ctx := context.Background()
	var lat []time.Duration
	for i := range 5 {
		time.Sleep(1200*time.Millisecond + time.Duration(i)*100*time.Millisecond) // idle: asleep between polls
		enq := time.Now()
		job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: strconv.Itoa(i), HTML: "<p>x"})
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, s.await(t, job.TaskID, 5*time.Second).Sub(enq))
	}
	slices.Sort(lat)
	t.Logf("enqueue → handler start after idle, TASK_CHECK_INTERVAL=1s: %v", lat)
	// The poll alone would make these 0-1.5 s (median ~500 ms); the bound
	// leaves room for a loaded machine and the race detector.
	if lat[len(lat)/2] > 50*time.Millisecond || lat[len(lat)-1] > 250*time.Millisecond {
		t.Errorf("pick-up after idle %v: want median ≤ 50ms, max ≤ 250ms", lat)
	}
	if got := sample(t, w, "pdfexport_queue_wakeups_total", "doorbell"); got < 5 {
		t.Errorf("pdfexport_queue_wakeups_total{by=doorbell} = %v, want ≥ 5", got)
	}
	if got := sample(t, w, "pdfexport_queue_idle_polls_total", ""); got < 5 {
		t.Errorf("pdfexport_queue_idle_polls_total = %v, want ≥ 5", got)
	}
	// Stopping ends the idle wait (IdleWait's context): shutdown does not
	// wait out the up to 1.5 s until the next poll.
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	w.Shutdown()
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Errorf("an idle worker took %v to shut down", took)
	} else {
		t.Logf("an idle worker shut down in %v", took)
	}
}

// ringDropper is a TCP proxy in front of Redis that can drop the doorbell's
// pushes (RESP "smessage" frames) on their way to the subscriber, as a
// network blip would.
type ringDropper struct {
	ln      net.Listener
	target  string
	drop    atomic.Bool
	dropped atomic.Int64
}

func startRingDropper(t *testing.T, target string) *ringDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ringDropper{ln: ln, target: target}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			mu.Lock()
			open = append(open, client, server)
			mu.Unlock()
			conns.Add(2)
			go func() { defer conns.Done(); _, _ = io.Copy(server, client); _ = server.Close() }()
			go func() { defer conns.Done(); p.replies(server, client); _ = client.Close() }()
		}
	}()
	return p
}

func (p *ringDropper) addr() string { return p.ln.Addr().String() }

// replies copies server → client, leaving out a read that carries a ring
// while dropping is on (a ring is small: it arrives in one read of its own).
func (p *ringDropper) replies(server, client net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if p.drop.Load() && bytes.Contains(chunk, []byte("smessage")) {
				p.dropped.Add(1)
			} else if _, werr := client.Write(chunk); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestWorker_ALostRingCostsOnePollInterval: rings dropped on the way to the
// worker, and a task enqueued without any ring (a plain asynq client, the
// dashboard), are picked up by the slow poll, within one interval (jittered
// up to 1.5×), never stuck; with rings flowing again, pick-up is immediate.
func TestWorker_ALostRingCostsOnePollInterval(t *testing.T) {
	// Serial (no t.Parallel): its pick-up latencies are real-time bounds.
	redis := testsupport.StartRedis(t)
	proxy := startRingDropper(t, redis.Addr())
	const interval = 400 * time.Millisecond
	w, s := idleWorker(t, "redis://"+proxy.addr()+"/0", interval)
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	ctx := context.Background()
	enqueue := func(version string) (string, time.Time) {
		t.Helper()
		enq := time.Now()
		job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: version, HTML: "<p>x"})
		if err != nil {
			t.Fatal(err)
		}
		return job.TaskID, enq
	}
	time.Sleep(2 * interval)

	proxy.drop.Store(true)
	timerBefore := sample(t, w, "pdfexport_queue_wakeups_total", "timer")
	var lost []time.Duration
	for i := range 3 {
		time.Sleep(interval)
		id, enq := enqueue("lost-" + strconv.Itoa(i))
		lost = append(lost, s.await(t, id, 3*interval+time.Second).Sub(enq))
	}
	// Three rings dropped is the usual count; fewer happened under load
	// in make test (a ring the subscription missed while resubscribing,
	// or one split across two reads of the proxy). Each task must still
	// start within the bound below, and the poll must have found some.
	if proxy.dropped.Load() == 0 {
		t.Fatalf("the proxy dropped no ring: the test did not lose them")
	}
	for _, d := range lost {
		if d > 3*interval/2+250*time.Millisecond {
			t.Errorf("a task whose ring was lost started after %v, want within one poll interval (%v, jittered up to 1.5×)", d, interval)
		}
	}
	if got := sample(t, w, "pdfexport_queue_wakeups_total", "timer"); got <= timerBefore {
		t.Errorf("wake-ups by timer %v → %v: the lost rings' tasks were not found by the poll", timerBefore, got)
	}

	// No ring at all: a task enqueued by a plain asynq client.
	plain := asynq.NewClient(asynq.RedisClientOpt{Addr: redis.Addr()})
	t.Cleanup(func() { _ = plain.Close() })
	proxy.drop.Store(false)
	time.Sleep(interval)
	body, err := (spec.Request{V: spec.PayloadVersion, ManualID: "m", Version: "plain", Source: spec.RequestSource{HTML: "<p>x"}}).Envelope().Encode()
	if err != nil {
		t.Fatal(err)
	}
	enq := time.Now()
	info, err := plain.Enqueue(tasks.NewExportTask(body), asynq.Queue("default"))
	if err != nil {
		t.Fatal(err)
	}
	if d := s.await(t, info.ID, 3*interval+time.Second).Sub(enq); d > 3*interval/2+250*time.Millisecond {
		t.Errorf("a task enqueued without a ring started after %v, want within %v (jittered up to 1.5×)", d, interval)
	}

	// Rings flow again: immediate.
	time.Sleep(interval)
	id, enq := enqueue("rung")
	if d := s.await(t, id, 3*interval+time.Second).Sub(enq); d > 150*time.Millisecond {
		t.Errorf("with the doorbell back, pick-up took %v", d)
	}
	t.Logf("lost rings: picked up after %v (interval %v)", lost, interval)
}

// TestWorker_DoorbellSurvivesASentinelFailover: an idle worker on Sentinel
// keeps waking on the doorbell after the master fails over: its
// subscription follows the new master (and, until it does, the poll finds
// the task).
func TestWorker_DoorbellSurvivesASentinelFailover(t *testing.T) {
	// Serial (no t.Parallel): its pick-up latencies are real-time bounds.
	if testing.Short() {
		t.Skip("Sentinel failover")
	}
	sen := testsupport.StartRedisSentinel(t)
	env := []string{"REDIS_SENTINEL_ADDRS=" + strings.Join(sen.Addrs(), ","), "REDIS_SENTINEL_MASTER=" + sen.MasterName,
		"REDIS_PASSWORD=" + sen.Password, "REDIS_SENTINEL_PASSWORD=" + sen.SentinelPassword}
	cfg := loadConfig(t, append(env, "STORAGE_URL=file://"+t.TempDir(), "TASK_CHECK_INTERVAL=1s")...)
	cfg.AdminAddr = "" // an empty ADMIN_ADDR would take the default port
	s := &starts{at: map[string]time.Time{}}
	w := startWorker(t, cfg, Options{Renderer: stubRenderer{pdf: stubPDF}, Middleware: []asynq.MiddlewareFunc{s.middleware}})
	opt := asynq.RedisFailoverClientOpt{MasterName: sen.MasterName, SentinelAddrs: sen.Addrs(), Password: sen.Password, SentinelPassword: sen.SentinelPassword}
	c := newClient(t, exportclient.Config{Redis: opt})
	ctx := context.Background()
	pickup := func(version string) time.Duration {
		t.Helper()
		time.Sleep(1200 * time.Millisecond)
		var enq time.Time
		var job exportclient.Enqueued
		testsupport.Eventually(t, 10*time.Second, func() error { // the client may still be finding the new master
			enq = time.Now()
			var err error
			job, err = c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: version, HTML: "<p>x"})
			return err
		})
		return s.await(t, job.TaskID, 10*time.Second).Sub(enq)
	}
	if d := pickup("before"); d > 150*time.Millisecond {
		t.Errorf("before the failover, pick-up after idle took %v", d)
	}
	before, _ := sen.MasterAddr(ctx)
	sen.Master.Stop()
	testsupport.Eventually(t, 60*time.Second, func() error {
		now, err := sen.MasterAddr(ctx)
		return testsupport.Unless(err == nil && now != before, "no failover: the sentinels name %s (%v), the master was %s", now, err, before)
	})
	var after []time.Duration
	for i := range 4 {
		after = append(after, pickup(fmt.Sprintf("after-%d", i)))
	}
	t.Logf("pick-up after the failover: %v; wake-ups by doorbell %v, by timer %v", after,
		sample(t, w, "pdfexport_queue_wakeups_total", "doorbell"), sample(t, w, "pdfexport_queue_wakeups_total", "timer"))
	// The first may straddle the resubscription (the poll finds it); the
	// last ones must be rung.
	for _, d := range after {
		if d > 2*time.Second {
			t.Errorf("after the failover a task started after %v: stuck longer than a poll interval", d)
		}
	}
	if d := after[len(after)-1]; d > 150*time.Millisecond {
		t.Errorf("after the failover the doorbell does not wake the worker: pick-up %v (all: %v)", d, after)
	}
}

// TestWorker_ScheduledTasksAreFoundByThePoll: a task that becomes due
// without an enqueue (scheduled, or a retry: asynq's forwarder moves it to
// pending every 5 s) rings no doorbell; the idle poll finds it within one
// interval of the forwarder's move.
func TestWorker_ScheduledTasksAreFoundByThePoll(t *testing.T) {
	// Serial (no t.Parallel): it bounds pick-up by the poll interval in real time.
	redis := testsupport.StartRedis(t)
	const interval = 500 * time.Millisecond
	w, s := idleWorker(t, redis.URL(), interval)
	plain := asynq.NewClient(asynq.RedisClientOpt{Addr: redis.Addr()})
	t.Cleanup(func() { _ = plain.Close() })
	body, err := (spec.Request{V: spec.PayloadVersion, ManualID: "m", Version: "scheduled", Source: spec.RequestSource{HTML: "<p>x"}}).Envelope().Encode()
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(time.Second)
	info, err := plain.Enqueue(tasks.NewExportTask(body), asynq.Queue("default"), asynq.ProcessAt(due))
	if err != nil {
		t.Fatal(err)
	}
	// Due after 1 s; the forwarder (every 5 s) makes it pending; the poll
	// (≤ 1.5 × interval) finds it.
	started := s.await(t, info.ID, 5*time.Second+3*interval+2*time.Second)
	t.Logf("scheduled task due at +1s started at +%v; wake-ups by timer %v", started.Sub(due.Add(-time.Second)),
		sample(t, w, "pdfexport_queue_wakeups_total", "timer"))
}

// TestWorker_ABurstOfEnqueuesCostsIdleWorkersAFewPolls: 100 export tasks
// enqueued in a burst, one every 5 ms, each followed by its ring as every
// enqueuer does (asynq's client and doorbell.Ring: exportclient's steps
// without its validation, so that the pace holds whatever the machine's
// load).
// Every ring used to wake each of four idle workers (slots to spare,
// polling only every 10 s), of which one got the task and the others
// polled for nothing: about one idle poll per ring each. Coalesced, each
// polls at most once per doorbell.DefaultCoalesce window of the burst.
func TestWorker_ABurstOfEnqueuesCostsIdleWorkersAFewPolls(t *testing.T) {
	// Serial (no t.Parallel): it counts polls against real time.
	redis := testsupport.StartRedis(t)
	var workers []*Worker
	var all []*starts
	for range 4 {
		cfg := testConfig(t, redis.URL())
		cfg.TaskCheckInterval, cfg.WorkerConcurrency = 10*time.Second, 64
		s := &starts{at: map[string]time.Time{}}
		w := startWorker(t, cfg, Options{Renderer: stubRenderer{pdf: stubPDF}, Middleware: []asynq.MiddlewareFunc{s.middleware}})
		workers, all = append(workers, w), append(all, s)
	}
	rdb := redis.Client()
	client := asynq.NewClientFromRedisClient(rdb)
	ctx := context.Background()
	time.Sleep(500 * time.Millisecond) // every worker idle, its subscription's wake-up spent
	polls := func() []float64 {
		var out []float64
		for _, w := range workers {
			out = append(out, sample(t, w, "pdfexport_queue_idle_polls_total", ""))
		}
		return out
	}
	before := polls()
	const burst = 100
	var ids []string
	tick := time.NewTicker(5 * time.Millisecond) // a ring every 5 ms: 5 per window
	defer tick.Stop()
	start := time.Now()
	for i := range burst {
		<-tick.C
		payload := fmt.Sprintf(`{"v":1,"manual_id":"burst","version":"%d","source":{"html":"<p>x"}}`, i)
		info, err := client.EnqueueContext(ctx, tasks.NewExportTask([]byte(payload)))
		if err != nil {
			t.Fatal(err)
		}
		if err := doorbell.Ring(ctx, rdb, info.Queue); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	took := time.Since(start)
	for _, id := range ids {
		testsupport.Eventually(t, 20*time.Second, func() error {
			for _, s := range all {
				s.mu.Lock()
				_, ok := s.at[id]
				s.mu.Unlock()
				if ok {
					return nil
				}
			}
			return fmt.Errorf("task %s not started", id)
		})
	}
	time.Sleep(300 * time.Millisecond) // the workers idle again
	after := polls()
	// A poll per wait; waits end by a ring at most once per window (the
	// timer is 10 s): the burst's windows, the one after its last ring,
	// and the wait in progress at the end.
	limit := float64(took/doorbell.DefaultCoalesce) + 3
	t.Logf("%d enqueues in %v; idle polls per worker before %v, after %v (limit %v each)", burst, took.Round(time.Millisecond), before, after, limit)
	for i := range workers {
		if n := after[i] - before[i]; n > limit {
			t.Errorf("worker %d polled %v times idle during a burst of %d rings in %v; want ≤ %v", i, n, burst, took.Round(time.Millisecond), limit)
		}
	}
}
