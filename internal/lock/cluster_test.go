package lock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// On Redis Cluster every key of an artifact shares its hash slot, the scripts
// run there, and waiters are woken by sharded pub/sub on that shard.
func TestGate_OnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node Redis Cluster")
	}
	cluster := testsupport.StartRedisCluster(t)
	// A long poll interval: a waiter that wakes quickly was woken by SPUBLISH.
	g := NewGate(newTestMutex(t, cluster.Client(t), Config{TTL: 5 * time.Second, PollInterval: 10 * time.Second}))
	ctx := context.Background()
	for _, id := range []string{"alpha", "beta", "gamma", "delta"} { // spread over slots
		holder, err := g.Enter(ctx, id, "")
		if err != nil || holder.Result != Acquired {
			t.Fatalf("%s: Enter = %+v, %v", id, holder, err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var got []Entry
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e, err := g.Enter(ctx, id, "")
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				got = append(got, e)
				mu.Unlock()
			}()
		}
		time.Sleep(300 * time.Millisecond)
		released := time.Now()
		if err := holder.Lease.Release(ctx, Outcome{Status: StatusStored, ETag: id}); err != nil {
			t.Fatalf("%s: release: %v", id, err)
		}
		wg.Wait()
		if took := time.Since(released); took > 2*time.Second {
			t.Fatalf("%s: waiters woke %s after release; pub/sub did not reach them", id, took)
		}
		for _, e := range got {
			if e.Result != Released || e.Outcome.ETag != id {
				t.Fatalf("%s: waiter got %+v", id, e)
			}
		}
	}
}
