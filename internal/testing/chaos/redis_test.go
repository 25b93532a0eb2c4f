package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestChaos_SentinelMasterKilledDuringExports (scenario 8): queues and locks
// on a Sentinel deployment (master, replica, three Sentinels, all with
// passwords); the master is SIGKILLed while exports render. Sentinel
// promotes the replica; every export completes, none is lost; keys whose
// renders straddled the failover may render twice (their lock died with the
// master), keys started after it render once.
func TestChaos_SentinelMasterKilledDuringExports(t *testing.T) {
	requireFull(t)
	sc := &Scenario{Name: "8 Redis master killed under Sentinel", Fault: "SIGKILL of the Sentinel-monitored master while exports render", Faults: 1}
	record(t, sc)
	c := newCluster(t, clusterConfig{Workers: 2, Sentinel: true, Env: []string{"LOCK_TTL=5s", "RENDER_CONCURRENCY=2"}})
	c.countLeaks(sc)
	ctx := context.Background()
	oldMaster, err := c.sentinel.MasterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var during []*export
	for i := range 4 {
		label := fmt.Sprintf("s8-during-%c", 'a'+i)
		for j := range 3 {
			during = append(during, c.enqueue(fmt.Sprintf("%s#%d", label, j), request(label, 2*time.Second)))
		}
	}
	time.Sleep(time.Second) // replicated, and rendering
	c.sentinel.Master.Stop()
	killed := time.Now()
	testsupport.Eventually(t, 60*time.Second, func() error {
		addr, err := c.sentinel.MasterAddr(ctx)
		return testsupport.Unless(err == nil && addr != oldMaster, "no failover since the kill: the sentinels name %s (%v)", addr, err)
	})
	failover := time.Since(killed)
	c.failoverWindow = true
	c.waitAll(during, 240*time.Second)
	var duringSc Scenario
	c.verdict(&duringSc, during)
	c.failoverWindow = false

	var after []*export
	for i := range 4 {
		label := fmt.Sprintf("s8-after-%c", 'a'+i)
		for j := range 3 {
			after = append(after, c.enqueue(fmt.Sprintf("%s#%d", label, j), request(label, 500*time.Millisecond)))
		}
		repeat := fmt.Sprintf("s8-during-%c", 'a'+i)
		after = append(after, c.enqueue(repeat+"#again", request(repeat, 2*time.Second)))
	}
	c.waitAll(after, 120*time.Second)
	var afterSc Scenario
	c.verdict(&afterSc, after)
	for _, e := range after {
		if strings.HasSuffix(e.label, "#again") && e.status.Result != nil && e.status.Result.Rendered {
			t.Errorf("%s rendered again; its artifact was stored", e.label)
		}
	}
	c.failoverWindow = true // the totals include the failover's keys
	c.verdict(sc, append(during, after...))
	sc.Notes = fmt.Sprintf("failover %.1f s (Sentinel down-after 1 s); during it: %d exports, %d renders for %d keys, %d failed open; after: %d exports, %d renders for %d keys, 0 duplicates required",
		failover.Seconds(), duringSc.Exports, duringSc.Renders, duringSc.Keys, duringSc.FailOpen, afterSc.Exports, afterSc.Renders, afterSc.Keys)
}

// TestChaos_QueuedExportsSurviveARedisRestart (scenario 9): with appendonly
// yes, exports enqueued while no worker runs survive a crash and restart of
// Redis, and all complete once workers start. The same with persistence off
// loses them all, which shows the test can see a loss.
func TestChaos_QueuedExportsSurviveARedisRestart(t *testing.T) {
	sc := &Scenario{Name: "9 queued exports across a Redis crash (AOF)", Fault: "SIGKILL of Redis with 16 exports queued and no worker, restart from its append-only file", Faults: 1}
	record(t, sc)

	t.Run("without persistence they are lost", func(t *testing.T) {
		c := newCluster(t, clusterConfig{Workers: 0})
		var queued []*export
		for i := range 4 {
			queued = append(queued, c.enqueue(fmt.Sprintf("s9-volatile-%d", i), request(fmt.Sprintf("s9-volatile-%d", i), 0)))
		}
		time.Sleep(1500 * time.Millisecond)
		c.redis.Stop()
		c.redis.Start()
		for _, e := range queued {
			if _, err := c.client.Status(context.Background(), e.taskID); !errors.Is(err, exportclient.ErrNotFound) {
				t.Errorf("%s after a restart without persistence: %v, want not found (the test cannot see a loss otherwise)", e.label, err)
			}
		}
	})

	c := newCluster(t, clusterConfig{Workers: 0, AOF: true})
	c.countLeaks(sc)
	var queued []*export
	for i := range 4 {
		label := fmt.Sprintf("s9-durable-%c", 'a'+i)
		r := request(label, 300*time.Millisecond)
		if i < 2 { // 32 KiB or more: the document travels beside the task
			r.HTML += "<!-- " + strings.Repeat("padding ", 5000) + " -->"
		}
		for j := range 4 {
			queued = append(queued, c.enqueue(fmt.Sprintf("%s#%d", label, j), r))
		}
	}
	time.Sleep(1500 * time.Millisecond) // appendfsync everysec: on disk
	c.redis.Stop()                      // a crash, not a clean shutdown
	c.redis.Start()
	if docs := c.rdb.Keys(context.Background(), "pdfexport:html:*").Val(); len(docs) != 2 {
		t.Errorf("%d source documents after the restart, want the 2 that travel beside their tasks", len(docs))
	}
	c.startWorker()
	c.startWorker()
	c.waitAll(queued, 120*time.Second)
	c.verdict(sc, queued)
	if sc.Renders != 4 {
		t.Errorf("%d renders for 4 keys", sc.Renders)
	}
	if docs := c.rdb.Keys(context.Background(), "pdfexport:html:*").Val(); len(docs) != 0 {
		t.Errorf("source documents left after every export completed: %v", docs)
	}
	sc.Notes = "appendonly yes, appendfsync everysec; Redis SIGKILLed 1.5 s after the last enqueue; half the keys' documents (≥ 32 KiB) travel beside their tasks and survive too; control run without persistence lost every queued export"
}
