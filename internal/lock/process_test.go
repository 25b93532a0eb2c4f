package lock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// The tests below run this test binary again as separate OS processes
// (PDFEXPORT_LOCK_HELPER selects the role), so that mutual exclusion, pauses
// and crashes are real process events, not goroutine tricks.
func TestMain(m *testing.M) {
	switch os.Getenv("PDFEXPORT_LOCK_HELPER") {
	case "":
		os.Exit(m.Run())
	case "contend":
		os.Exit(helperContend())
	case "hold":
		os.Exit(helperHold())
	default:
		fmt.Fprintln(os.Stderr, "unknown helper role")
		os.Exit(2)
	}
}

func helperClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: os.Getenv("PDFEXPORT_REDIS_ADDR")})
}

// helperContend: many goroutines acquire the same key repeatedly; inside the
// critical section each proves exclusivity with two independent witnesses, an
// O_EXCL file and a Redis counter. Prints "acquired N violations V".
func helperContend() int {
	rdb := helperClient()
	defer rdb.Close()
	m := NewMutex(rdb, Config{TTL: 5 * time.Second, Logger: quietLogger})
	witness := filepath.Join(os.Getenv("PDFEXPORT_WITNESS_DIR"), "holder")
	deadline := time.Now().Add(2 * time.Second)
	var acquired, violations atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for time.Now().Before(deadline) {
				lease, err := m.TryAcquire(ctx, "contended")
				if errors.Is(err, ErrNotAcquired) {
					time.Sleep(time.Millisecond)
					continue
				}
				if err != nil {
					violations.Add(1)
					return
				}
				acquired.Add(1)
				f, err := os.OpenFile(witness, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
				if err != nil {
					violations.Add(1)
				}
				if n := rdb.Incr(ctx, "witness:inside").Val(); n != 1 {
					violations.Add(1)
				}
				time.Sleep(200 * time.Microsecond)
				rdb.Decr(ctx, "witness:inside")
				if f != nil {
					f.Close()
					os.Remove(witness)
				}
				if err := lease.Release(ctx, Outcome{Status: StatusFailed}); err != nil {
					violations.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("acquired %d violations %d\n", acquired.Load(), violations.Load())
	return 0
}

// helperHold acquires "held", prints "acquired FENCE", works for
// PDFEXPORT_WORK, then confirms its lease before "storing": prints "stored"
// or "abandoned CAUSE".
func helperHold() int {
	rdb := helperClient()
	defer rdb.Close()
	ttl, _ := time.ParseDuration(os.Getenv("PDFEXPORT_TTL"))
	work, _ := time.ParseDuration(os.Getenv("PDFEXPORT_WORK"))
	m := NewMutex(rdb, Config{TTL: ttl, Logger: quietLogger})
	ctx := context.Background()
	lease, err := m.TryAcquire(ctx, "held")
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("acquired", lease.Fence())
	end := time.Now().Add(work)
	for time.Now().Before(end) && lease.Context().Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if err := lease.Confirm(ctx); err != nil {
		fmt.Println("abandoned", err)
		if rerr := lease.Release(ctx, Outcome{Status: StatusFailed}); !errors.Is(rerr, ErrLockNotHeld) {
			fmt.Println("release-of-lost-lock", rerr)
		}
		return 0
	}
	fmt.Println("stored")
	_ = lease.Release(ctx, Outcome{Status: StatusStored, ETag: "held"})
	return 0
}

type helper struct {
	cmd   *exec.Cmd
	lines chan string
}

func startHelper(t *testing.T, role string, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"PDFEXPORT_LOCK_HELPER=" + role}, env...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return h
}

func (h *helper) line(t *testing.T, within time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatal("helper exited without the expected line")
		}
		return l
	case <-time.After(within):
		t.Fatalf("no line from helper within %s", within)
	}
	return ""
}

func TestMutex_NeverTwoHoldersAcrossProcesses(t *testing.T) {
	srv := testsupport.StartRedis(t)
	witnessDir := t.TempDir()
	env := []string{"PDFEXPORT_REDIS_ADDR=" + srv.Addr(), "PDFEXPORT_WITNESS_DIR=" + witnessDir}
	var helpers []*helper
	for range 3 {
		helpers = append(helpers, startHelper(t, "contend", env...))
	}
	var total int64
	for i, h := range helpers {
		var acquired, violations int64
		l := h.line(t, 30*time.Second)
		if _, err := fmt.Sscanf(l, "acquired %d violations %d", &acquired, &violations); err != nil {
			t.Fatalf("helper %d said %q", i, l)
		}
		if violations != 0 {
			t.Fatalf("helper %d saw %d mutual-exclusion violations", i, violations)
		}
		total += acquired
	}
	if total < 30 {
		t.Fatalf("only %d acquisitions in total: the test did not exercise contention", total)
	}
	t.Logf("3 processes × 8 goroutines: %d exclusive acquisitions, 0 violations", total)
}

func TestLease_PausedHolderLosesLockAndStoresNothing(t *testing.T) {
	srv := testsupport.StartRedis(t)
	h := startHelper(t, "hold", "PDFEXPORT_REDIS_ADDR="+srv.Addr(), "PDFEXPORT_TTL=500ms", "PDFEXPORT_WORK=3s")
	var firstFence int64
	if _, err := fmt.Sscanf(h.line(t, 10*time.Second), "acquired %d", &firstFence); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(800 * time.Millisecond) // past the 500 ms TTL
	m := newTestMutex(t, srv.Client(), Config{TTL: 10 * time.Second})
	lease, err := m.TryAcquire(context.Background(), "held")
	if err != nil {
		t.Fatalf("acquire after the paused holder's TTL: %v", err)
	}
	if lease.Fence() <= firstFence {
		t.Fatalf("new fence %d not above the paused holder's %d", lease.Fence(), firstFence)
	}
	if err := h.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if l := h.line(t, 10*time.Second); !strings.HasPrefix(l, "abandoned") {
		t.Fatalf("resumed holder said %q, want abandoned", l)
	}
	if err := lease.Release(context.Background(), Outcome{Status: StatusStored, ETag: "ours"}); err != nil {
		t.Fatalf("the resumed holder disturbed the new holder: %v", err)
	}
}

func TestGate_KilledHolderIsTakenOverWithinTTLPlusPoll(t *testing.T) {
	srv := testsupport.StartRedis(t)
	const ttl, poll = 600 * time.Millisecond, 100 * time.Millisecond
	h := startHelper(t, "hold", "PDFEXPORT_REDIS_ADDR="+srv.Addr(), "PDFEXPORT_TTL="+ttl.String(), "PDFEXPORT_WORK=1m")
	if l := h.line(t, 10*time.Second); !strings.HasPrefix(l, "acquired") {
		t.Fatalf("holder said %q", l)
	}
	g := NewGate(newTestMutex(t, srv.Client(), Config{TTL: 5 * time.Second, PollInterval: poll}))
	results := make(chan Entry, 3)
	for range 3 {
		go func() {
			e, err := g.Enter(context.Background(), "held", "")
			if err != nil {
				t.Error(err)
			}
			results <- e
		}()
	}
	time.Sleep(50 * time.Millisecond)
	killed := time.Now()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first := <-results
	if first.Result != Acquired {
		t.Fatalf("first waiter got %s, want Acquired", first.Result)
	}
	if took := time.Since(killed); took > ttl+poll+200*time.Millisecond {
		t.Fatalf("takeover took %s, want ≤ TTL %s + poll %s", took, ttl, poll)
	}
	_ = first.Lease.Release(context.Background(), Outcome{Status: StatusStored, ETag: "new"})
	for range 2 {
		if e := <-results; e.Result != Released || e.Outcome.ETag != "new" {
			t.Fatalf("other waiter got %+v, want Released(new)", e)
		}
	}
}

func TestGate_WaitersWakeByPollingWhenPubSubIsKilled(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	const poll = 300 * time.Millisecond
	g := NewGate(newTestMutex(t, rdb, Config{TTL: 10 * time.Second, PollInterval: poll}))
	ctx := context.Background()
	holder, err := g.Enter(ctx, "k", "")
	if err != nil || holder.Result != Acquired {
		t.Fatal(err)
	}
	results := make(chan Entry, 2)
	for range 2 {
		go func() {
			e, _ := g.Enter(ctx, "k", "")
			results <- e
		}()
	}
	// Wait until both waiters are subscribed, then cut their pub/sub links.
	testsupport.Eventually(t, 5*time.Second, func() error {
		n, err := rdb.PubSubShardNumSub(ctx, keyspace.Released("k")).Result()
		return testsupport.Unless(n[keyspace.Released("k")] == 2, "waiters never subscribed: %v (%v)", n, err)
	})
	if err := rdb.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	if err := holder.Lease.Release(ctx, Outcome{Status: StatusStored, ETag: "e"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e := <-results
		if e.Result != Released {
			t.Fatalf("waiter got %s, want Released", e.Result)
		}
	}
	if took := time.Since(released); took > poll+500*time.Millisecond {
		t.Fatalf("waiters woke %s after release, want within a poll interval (%s)", took, poll)
	}
}
