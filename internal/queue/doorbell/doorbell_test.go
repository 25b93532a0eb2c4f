package doorbell_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/queue/doorbell"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// counts is an Observer for the tests.
type counts struct {
	mu    sync.Mutex
	polls int
	woken map[string]int
}

func (c *counts) IdlePoll() { c.mu.Lock(); c.polls++; c.mu.Unlock() }
func (c *counts) Woken(by string) {
	c.mu.Lock()
	c.woken[by]++
	c.mu.Unlock()
}

func (c *counts) get(by string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.woken[by]
}

type waitFunc = func(context.Context, time.Duration)

// startBell starts a Bell with one waiter per queue set.
func startBell(t *testing.T, rdb redis.UniversalClient, queueSets ...[]string) ([]waitFunc, *counts) {
	t.Helper()
	obs := &counts{woken: map[string]int{}}
	b := doorbell.New(doorbell.Config{RDB: rdb, Observer: obs, Logger: slog.New(slog.DiscardHandler)})
	var waits []waitFunc
	for _, qs := range queueSets {
		waits = append(waits, b.Waiter(qs...))
	}
	b.Start()
	t.Cleanup(b.Close)
	// The confirmed subscription wakes every waiter once (rings may have
	// been missed before it): consume that.
	for _, wait := range waits {
		expectWait(t, wait, time.Second, true, "the subscription's confirmation")
	}
	return waits, obs
}

// expectWait runs one wait of at most d and checks whether it was rung.
func expectWait(t *testing.T, wait waitFunc, d time.Duration, rung bool, what string) {
	t.Helper()
	start := time.Now()
	wait(context.Background(), d)
	took := time.Since(start)
	switch {
	case rung && took >= d:
		t.Fatalf("%s: Wait(%v) was not rung", what, d)
	case !rung && took < d:
		t.Fatalf("%s: Wait(%v) ended after %v, want the timer", what, d, took)
	}
}

// exercise checks the Bell on any topology: rings of its queues end a Wait
// at once, others do not; a ring while nobody waits is kept for the next
// Wait (the task it announced may be newer than the last poll), and only
// one; a canceled context ends a Wait.
func exercise(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	waits, obs := startBell(t, rdb, []string{"critical", "default"}, []string{"batch"})
	b, batch := waits[0], waits[1]

	go func() {
		time.Sleep(50 * time.Millisecond)
		if err := doorbell.Ring(ctx, rdb, "default"); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	b(ctx, 5*time.Second)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a ring for a served queue ended the wait after %v", took)
	}

	if err := doorbell.Ring(ctx, rdb, "batch"); err != nil { // served by the other waiter only
		t.Fatal(err)
	}
	expectWait(t, b, 300*time.Millisecond, false, "a ring for a queue the server does not serve")
	expectWait(t, batch, time.Second, true, "a ring for the other server's queue")
	expectWait(t, batch, 100*time.Millisecond, false, "the other server, after the rings for the first")

	for range 3 { // while the worker polls or works: kept, once
		if err := doorbell.Ring(ctx, rdb, "critical"); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	expectWait(t, b, time.Second, true, "a ring sent before the wait")
	expectWait(t, b, 200*time.Millisecond, false, "the second wait after three rings")

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	start = time.Now()
	b(cctx, 5*time.Second)
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a canceled context ended the wait after %v", took)
	}
	if obs.get(doorbell.ByDoorbell) < 5 || obs.get(doorbell.ByTimer) != 3 {
		t.Errorf("wake-ups %v, want ≥ 5 by doorbell and 3 by timer", obs.woken)
	}
}

func TestBell_SingleNode(t *testing.T) {
	exercise(t, testsupport.StartRedis(t).Client())
}

func TestBell_Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("Redis Cluster")
	}
	exercise(t, testsupport.StartRedisCluster(t).Client(t))
}

// TestBell_ResubscribesAfterARedisRestart: a Redis restart drops the
// subscription (and any ring sent meanwhile); the Bell wakes its worker
// when it is subscribed again, and rings work again.
func TestBell_ResubscribesAfterARedisRestart(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	waits, _ := startBell(t, rdb, []string{"default"})
	b := waits[0]
	srv.Stop()
	srv.Start()
	// The resubscription wakes the worker once (go-redis notices the
	// broken connection at its next health-check ping, ≤ 3 s).
	expectWait(t, b, 10*time.Second, true, "the resubscription after a restart")
	ctx := context.Background()
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = doorbell.Ring(ctx, rdb, "default")
	}()
	expectWait(t, b, 5*time.Second, true, "a ring after the restart")
}

// TestPollOnly: without the doorbell the wait is the poll interval, and is
// counted as an idle poll ended by the timer; a canceled context ends it.
func TestPollOnly(t *testing.T) {
	obs := &counts{woken: map[string]int{}}
	wait := doorbell.PollOnly(obs)
	start := time.Now()
	wait(context.Background(), 50*time.Millisecond)
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("waited %v, want 50ms", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wait(ctx, time.Hour)
	if obs.polls != 2 || obs.get(doorbell.ByTimer) != 1 || obs.get(doorbell.ByDoorbell) != 0 {
		t.Errorf("polls %d, wake-ups %v; want 2 polls, 1 by timer", obs.polls, obs.woken)
	}
}

// TestBell_CoalescesABurstOfRings: a server that finds its queue empty at
// every poll (the others took the tasks) waits again at once; 100 rings in
// a burst used to end about as many waits. Coalesced, waits end by a ring
// at most once per window: the burst's windows and the one after its last
// ring. A ring after a quiet window still ends a wait at once.
func TestBell_CoalescesABurstOfRings(t *testing.T) {
	rdb := testsupport.StartRedis(t).Client()
	waits, obs := startBell(t, rdb, []string{"default"})
	wait := waits[0]
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			wait(ctx, 10*time.Second) // poll: nothing there; wait again
		}
	}()
	before := obs.get(doorbell.ByDoorbell)
	start := time.Now()
	for range 100 {
		if err := doorbell.Ring(ctx, rdb, "default"); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	time.Sleep(3 * doorbell.DefaultCoalesce) // the trailing wake-up
	cancel()
	<-done
	woken := obs.get(doorbell.ByDoorbell) - before
	limit := int(took/doorbell.DefaultCoalesce) + 2
	t.Logf("100 rings in %v woke the server %d times (limit %d)", took.Round(time.Millisecond), woken, limit)
	if woken > limit || woken < 1 {
		t.Errorf("100 rings in %v woke the server %d times; want 1..%d", took.Round(time.Millisecond), woken, limit)
	}

	time.Sleep(2 * doorbell.DefaultCoalesce) // quiet
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = doorbell.Ring(context.Background(), rdb, "default")
	}()
	start = time.Now()
	wait(context.Background(), 5*time.Second)
	if took := time.Since(start); took > 20*time.Millisecond+doorbell.DefaultCoalesce {
		t.Errorf("a ring after a quiet window ended the wait after %v", took)
	}
}
