package chaos

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// holderScenario starts a render of a slow page (printable after ready) on a
// cluster whose workers take one task at a time, finds the worker holding the
// render lock, and queues waiters for the same artifact that land on the
// other workers. It returns the holder and all exports (the holder's first).
func holderScenario(t *testing.T, c *cluster, label string, ready time.Duration, waiters int) (*worker, []*export) {
	t.Helper()
	req := request(label, ready)
	first := c.enqueue(label+"#0", req)
	c.waitState(first.taskID, 30*time.Second, exportclient.StateActive)
	holder := waitLog(t, c.live(), "lock acquired", 30*time.Second)
	exports := []*export{first}
	for i := 1; i <= waiters; i++ {
		exports = append(exports, c.enqueue(label+"#"+string(rune('0'+i)), req))
	}
	for _, e := range exports[1:] {
		c.waitState(e.taskID, 30*time.Second, exportclient.StateActive)
	}
	return holder, exports
}

// TestChaos_HolderSIGKILLedMidRenderAnotherWorkerCompletes (scenario 1): the
// worker holding a render is SIGKILLed while its page is still loading. The
// waiting exports take over once its lock expires (LOCK_TTL=3s) and render
// exactly once; the killed task is re-delivered by asynq after its lease
// expires and reuses the artifact. The killed worker's Chromium dies with it.
func TestChaos_HolderSIGKILLedMidRenderAnotherWorkerCompletes(t *testing.T) {
	sc := &Scenario{Name: "1 holder SIGKILLed mid-render", Fault: "SIGKILL of the lock holder during wait_for", Faults: 1}
	record(t, sc)
	c := newCluster(t, clusterConfig{Workers: 3, Env: []string{"LOCK_TTL=3s", "WORKER_CONCURRENCY=1"}})
	c.countLeaks(sc)
	holder, exports := holderScenario(t, c, "s1-kill", 3*time.Second, 2)
	c.crash(holder)
	killedAt := time.Now()

	c.waitAll(exports[1:], 60*time.Second)
	for _, e := range exports[1:] {
		if e.status.State != exportclient.StateCompleted {
			t.Fatalf("waiting export %s: %s %q (%v)", e.label, e.status.State, e.status.Error, e.err)
		}
	}
	tookOver := time.Since(killedAt)
	// The killed task is still "active" in asynq until its lease expires.
	if full() {
		sc.Notes = "real asynq lease expiry"
		c.startWorker("LOCK_TTL=3s", "WORKER_CONCURRENCY=1")
		c.waitAll(exports[:1], 200*time.Second)
	} else {
		sc.Notes = "quick run: asynq lease of the killed task fast-forwarded, replacement worker's recoverer re-queues it"
		c.fastForwardLease("default", exports[0].taskID)
		c.startWorker("LOCK_TTL=3s", "WORKER_CONCURRENCY=1")
		c.waitAll(exports[:1], 60*time.Second)
	}
	c.verdict(sc, exports)
	if sc.Renders != 1 {
		t.Errorf("%d renders, want exactly 1", sc.Renders)
	}
	if fence, _ := c.info(exports[1].status.Result.ArtifactKey); fence < 2 {
		t.Errorf("artifact stored with fence %d, want the take-over's (≥2)", fence)
	}
	sc.Notes += "; waiters completed " + tookOver.Round(100*time.Millisecond).String() + " after the kill, the killed task " +
		time.Since(killedAt).Round(time.Second).String() + " after"
}

// TestChaos_HolderSIGSTOPpedPastTTLDoesNotStore (scenario 2): the holder is
// frozen past its LOCK_TTL; another worker takes over and stores. When the
// frozen worker resumes, its lease is gone: it abandons its render and
// stores nothing, and its task then reuses the take-over's artifact.
func TestChaos_HolderSIGSTOPpedPastTTLDoesNotStore(t *testing.T) {
	requireFull(t)
	sc := &Scenario{Name: "2 holder SIGSTOPped past LOCK_TTL", Fault: "SIGSTOP of the holder for 3×LOCK_TTL, then SIGCONT", Faults: 1}
	record(t, sc)
	c := newCluster(t, clusterConfig{Workers: 2, Env: []string{"LOCK_TTL=3s", "WORKER_CONCURRENCY=1"}})
	c.countLeaks(sc)
	holder, exports := holderScenario(t, c, "s2-stop", 2*time.Second, 1)
	holder.Signal(syscall.SIGSTOP)
	// The waiter takes over after ≤3 s and renders for ~2.5 s.
	var other *worker
	for _, w := range c.live() {
		if w != holder {
			other = w
		}
	}
	// Resumed either way: the verdict below tells whether the waiter took over.
	_ = testsupport.Within(40*time.Second, func() error {
		return testsupport.Unless(strings.Contains(other.Output(), "export done"), "the waiter has not rendered")
	})
	holder.Signal(syscall.SIGCONT)
	c.waitAll(exports, 90*time.Second)
	c.verdict(sc, exports)
	if sc.Renders != 1 {
		t.Errorf("%d renders, want exactly 1", sc.Renders)
	}
	if !strings.Contains(holder.Output(), "lock lost") {
		t.Errorf("the resumed holder did not notice it lost the lock")
	}
	if n := metric(t, holder, "pdfexport_lock_lost_total", ""); n < 1 {
		t.Errorf("holder's pdfexport_lock_lost_total = %v, want ≥ 1", n)
	}
	rendered := metric(t, holder, "pdfexport_exports_total", `outcome="rendered"`) + metric(t, other, "pdfexport_exports_total", `outcome="rendered"`)
	if rendered != 1 {
		t.Errorf("pdfexport_exports_total{outcome=rendered} over both workers = %v, want 1", rendered)
	}
	if r := exports[0].status.Result; r != nil && r.Rendered {
		t.Errorf("the frozen holder's task reports rendered:true; it must have reused the take-over's artifact")
	}
	if fence, _ := c.info(exports[1].status.Result.ArtifactKey); fence != 2 {
		t.Errorf("stored artifact has fence %d, want 2 (the take-over's)", fence)
	}
	sc.Notes = "stored fence 2 (take-over); the resumed holder logged lock lost and stored nothing"
}

// TestChaos_LockRedisRestartedFailsOpen (scenario 3): the lock Redis is
// killed and restarted (empty) while renders run. Exports keep going: gate
// entries during the outage fail open; afterwards the gate serializes again
// and every new key renders exactly once.
func TestChaos_LockRedisRestartedFailsOpen(t *testing.T) {
	sc := &Scenario{Name: "3 lock Redis restarted mid-run", Fault: "SIGKILL of the lock Redis, 3 s down, restart empty", Faults: 1}
	record(t, sc)
	c := newCluster(t, clusterConfig{Workers: 2, LockRedis: true, Env: []string{"RENDER_CONCURRENCY=2"}})
	c.countLeaks(sc)
	var during, after []*export
	for i := range 4 {
		label := "s3-during-" + string(rune('a'+i))
		for j := range 3 {
			during = append(during, c.enqueue(label+"#"+string(rune('0'+j)), request(label, 1500*time.Millisecond)))
		}
	}
	time.Sleep(time.Second)
	c.lockRedis.Stop()
	time.Sleep(3 * time.Second)
	c.lockRedis.Start()
	c.waitAll(during, 120*time.Second)

	for i := range 4 {
		label := "s3-after-" + string(rune('a'+i))
		for j := range 3 {
			after = append(after, c.enqueue(label+"#"+string(rune('0'+j)), request(label, 500*time.Millisecond)))
		}
		// The keys rendered during the outage are reused now.
		after = append(after, c.enqueue("s3-during-"+string(rune('a'+i))+"#again", request("s3-during-"+string(rune('a'+i)), 1500*time.Millisecond)))
	}
	c.waitAll(after, 120*time.Second)
	c.verdict(sc, append(during, after...))
	var afterSc Scenario
	c.verdict(&afterSc, after)
	if afterSc.Duplicates != 0 || afterSc.FailOpen != 0 {
		t.Errorf("after the restart: %d duplicates, %d fail-open exports; want 0", afterSc.Duplicates, afterSc.FailOpen)
	}
	for _, e := range after {
		if strings.Contains(e.label, "#again") && e.status.Result != nil && e.status.Result.Rendered {
			t.Errorf("%s rendered again; the artifact was stored", e.label)
		}
	}
	sc.Notes = "lock Redis separate from the queue (LOCK_REDIS_URL); duplicates are those of keys in flight during the outage"
}

// TestChaos_S3DownFor20sExportsRetriedAndComplete (scenario 4): the S3
// server is down for 20 s while exports run; they fail, are retried with
// backoff, and all complete once it is back, each artifact whole.
func TestChaos_S3DownFor20sExportsRetriedAndComplete(t *testing.T) {
	requireFull(t)
	sc := &Scenario{Name: "4 S3 server down 20 s", Fault: "S3 server SIGKILLed, restarted after 20 s", Faults: 1}
	record(t, sc)
	c := newCluster(t, clusterConfig{Workers: 2, S3: true, Env: []string{"RENDER_CONCURRENCY=2"}})
	c.countLeaks(sc)
	var exports []*export
	for i := range 4 {
		label := "s4-" + string(rune('a'+i))
		for j := range 2 {
			exports = append(exports, c.enqueue(label+"#"+string(rune('0'+j)), request(label, time.Duration(i)*700*time.Millisecond)))
		}
	}
	time.Sleep(1500 * time.Millisecond)
	c.s3.Stop()
	time.Sleep(20 * time.Second)
	c.s3.Start()
	c.waitAll(exports, 240*time.Second)
	c.verdict(sc, exports)
	retried := 0
	for _, e := range exports {
		retried += e.status.Retried
	}
	sc.Notes = "MAX_RETRY 5 (default), retries " + strconv.Itoa(retried) + "; artifacts downloaded through the presigned result URL"
}

// TestChaos_ChromiumKilledMidRender (scenario 5): the holder's Chromium is
// SIGKILLed during a render. The render fails as a browser crash (retryable),
// the task is retried, a new browser renders it, and no process of the
// killed browser stays behind.
func TestChaos_ChromiumKilledMidRender(t *testing.T) {
	requireFull(t)
	sc := &Scenario{Name: "5 Chromium killed mid-render", Fault: "SIGKILL of the holder's browser process", Faults: 1}
	record(t, sc)
	c := newCluster(t, clusterConfig{Workers: 2, Env: []string{"LOCK_TTL=3s", "WORKER_CONCURRENCY=1"}})
	c.countLeaks(sc)
	holder, exports := holderScenario(t, c, "s5-chromium", 3*time.Second, 1)
	pid, ok := chromiumOf(holder)
	if !ok {
		t.Fatalf("no Chromium below worker %s", holder.name)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	c.waitAll(exports, 90*time.Second)
	c.verdict(sc, exports)
	if sc.Renders != 1 {
		t.Errorf("%d renders, want 1", sc.Renders)
	}
	if l := holder.Output(); !strings.Contains(l, "browser crashed") && !strings.Contains(l, "browser died") || holder.Exited() {
		t.Errorf("holder exited or did not notice the browser crash")
	}
	sc.Notes = "the holder's render failed as \"browser crashed\" (retryable) and released the lock; the waiting export took over and rendered once, the holder's task was retried and reused it"
}

// TestChaos_WorkerSIGTERMMidRender (scenario 6): a worker told to stop while
// it renders either finishes the export within SHUTDOWN_TIMEOUT (6a) or, with
// a shutdown timeout shorter than the render, hands the task back so another
// worker completes it (6b). Both exit 0 and leave no Chromium behind.
func TestChaos_WorkerSIGTERMMidRender(t *testing.T) {
	for _, tc := range []struct {
		name, timeout string
		wantHere      bool
	}{
		{"6a SIGTERM, render finishes within SHUTDOWN_TIMEOUT", "30s", true},
		{"6b SIGTERM, SHUTDOWN_TIMEOUT shorter than the render", "1s", false},
	} {
		t.Run(tc.timeout, func(t *testing.T) {
			sc := &Scenario{Name: tc.name, Fault: "SIGTERM of the holder during wait_for, SHUTDOWN_TIMEOUT=" + tc.timeout, Faults: 1}
			record(t, sc)
			c := newCluster(t, clusterConfig{Workers: 2, Env: []string{"LOCK_TTL=3s", "WORKER_CONCURRENCY=1", "SHUTDOWN_TIMEOUT=" + tc.timeout}})
			c.countLeaks(sc)
			holder, exports := holderScenario(t, c, "s6-"+tc.timeout, 3*time.Second, 0)
			c.terminate(holder)
			c.waitAll(exports, 90*time.Second)
			c.verdict(sc, exports)
			if sc.Renders != 1 {
				t.Errorf("%d renders, want 1", sc.Renders)
			}
			doneHere := strings.Contains(holder.Output(), "export done")
			if doneHere != tc.wantHere {
				t.Errorf("export done on the stopped worker: %v, want %v", doneHere, tc.wantHere)
			}
			if doneHere {
				sc.Notes = "finished on the stopped worker before it exited"
			} else {
				sc.Notes = "handed back to the queue, completed on the other worker"
			}
		})
	}
}
