package lock

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

func newTestMutex(t *testing.T, rdb redis.UniversalClient, cfg Config) *Mutex {
	t.Helper()
	cfg.Logger = quietLogger
	return NewMutex(rdb, cfg)
}

func TestGate_WaitersReuseAfterRelease(t *testing.T) {
	srv := testsupport.StartRedis(t)
	g := NewGate(newTestMutex(t, srv.Client(), Config{TTL: 5 * time.Second, PollInterval: time.Second}))
	ctx := context.Background()

	const callers = 16
	var acquired, released atomic.Int32
	var inside atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := g.Enter(ctx, "manual-a", "")
			if err != nil {
				errs <- err
				return
			}
			switch e.Result {
			case Acquired:
				acquired.Add(1)
				if inside.Add(1) != 1 {
					errs <- errors.New("two holders inside the critical section")
				}
				time.Sleep(200 * time.Millisecond) // the "render"
				inside.Add(-1)
				errs <- e.Lease.Release(ctx, Outcome{Status: StatusStored, ETag: "etag-1"})
			case Released:
				released.Add(1)
				if e.Outcome.ETag != "etag-1" {
					errs <- errors.New("waiter saw etag " + e.Outcome.ETag)
				}
			default:
				errs <- errors.New("unexpected result " + e.Result.String())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if acquired.Load() != 1 || released.Load() != callers-1 {
		t.Fatalf("acquired=%d released=%d, want 1 and %d", acquired.Load(), released.Load(), callers-1)
	}
}

func TestGate_LateCallerSeesStoredOutcome(t *testing.T) {
	srv := testsupport.StartRedis(t)
	g := NewGate(newTestMutex(t, srv.Client(), Config{}))
	ctx := context.Background()
	e, err := g.Enter(ctx, "k", "")
	if err != nil || e.Result != Acquired {
		t.Fatalf("first Enter = %v, %v", e.Result, err)
	}
	if err := e.Lease.Release(ctx, Outcome{Status: StatusStored, ETag: "x"}); err != nil {
		t.Fatal(err)
	}
	late, err := g.Enter(ctx, "k", "")
	if err != nil || late.Result != Released || late.Outcome.ETag != "x" {
		t.Fatalf("late Enter = %+v, %v; want Released with etag x", late, err)
	}
	forced, err := g.Enter(ctx, "k", "x")
	if err != nil || forced.Result != Acquired {
		t.Fatalf("forced Enter = %+v, %v; want Acquired", forced, err)
	}
	if forced.Lease.Fence() <= e.Lease.Fence() {
		t.Fatalf("fence did not grow: %d then %d", e.Lease.Fence(), forced.Lease.Fence())
	}
	_ = forced.Lease.Release(ctx, Outcome{Status: StatusFailed})
}

func TestGate_FailedReleaseLetsExactlyOneWaiterTakeOver(t *testing.T) {
	srv := testsupport.StartRedis(t)
	g := NewGate(newTestMutex(t, srv.Client(), Config{TTL: 5 * time.Second, PollInterval: 2 * time.Second}))
	ctx := context.Background()
	first, err := g.Enter(ctx, "k", "")
	if err != nil || first.Result != Acquired {
		t.Fatalf("first Enter = %v, %v", first.Result, err)
	}
	const waiters = 8
	results := make(chan Entry, waiters)
	for range waiters {
		go func() {
			e, err := g.Enter(ctx, "k", "")
			if err != nil {
				t.Error(err)
			}
			results <- e
			if e.Result == Acquired {
				time.Sleep(100 * time.Millisecond)
				_ = e.Lease.Release(ctx, Outcome{Status: StatusStored, ETag: "second"})
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // let the waiters subscribe
	if err := first.Lease.Release(ctx, Outcome{Status: StatusFailed}); err != nil {
		t.Fatal(err)
	}
	var takeovers, reused int
	for range waiters {
		switch e := <-results; e.Result {
		case Acquired:
			takeovers++
		case Released:
			reused++
		}
	}
	if takeovers != 1 || reused != waiters-1 {
		t.Fatalf("takeovers=%d reused=%d, want 1 and %d", takeovers, reused, waiters-1)
	}
}

func TestLease_RenewalKeepsShortLockThroughLongWork(t *testing.T) {
	srv := testsupport.StartRedis(t)
	m := newTestMutex(t, srv.Client(), Config{TTL: 300 * time.Millisecond})
	ctx := context.Background()
	lease, err := m.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second) // ten TTLs
	for time.Now().Before(deadline) {
		if _, err := m.TryAcquire(ctx, "k"); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("second TryAcquire during renewed lease = %v, want ErrNotAcquired", err)
		}
		if lease.Context().Err() != nil {
			t.Fatalf("lease context ended: %v", context.Cause(lease.Context()))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := lease.Release(ctx, Outcome{Status: StatusStored}); err != nil {
		t.Fatal(err)
	}
}

func TestLease_LostLockCancelsContextAndReleaseIsRefused(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	m := newTestMutex(t, rdb, Config{TTL: 300 * time.Millisecond})
	ctx := context.Background()
	lease, err := m.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// Another worker's token replaces ours, as after an expiry and a takeover.
	if err := rdb.Set(ctx, keyspace.Lock("k"), "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lease.Context().Done():
	case <-time.After(2 * time.Second):
		t.Fatal("lease context not cancelled after the lock was taken over")
	}
	if cause := context.Cause(lease.Context()); !errors.Is(cause, ErrLockLost) {
		t.Fatalf("cause = %v, want ErrLockLost", cause)
	}
	if err := lease.Release(ctx, Outcome{Status: StatusStored}); !errors.Is(err, ErrLockNotHeld) {
		t.Fatalf("Release = %v, want ErrLockNotHeld", err)
	}
	if got := rdb.Get(ctx, keyspace.Lock("k")).Val(); got != "someone-else" {
		t.Fatalf("release touched the other holder's lock: %q", got)
	}
	if n := rdb.Exists(ctx, keyspace.Done("k")).Val(); n != 0 {
		t.Fatal("a lost lease wrote the done marker")
	}
}

func TestGate_FailsOpenWhenRedisIsDown(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 500 * time.Millisecond, MaxRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	tests := []struct {
		name     string
		failOpen bool
	}{{"fail open on", true}, {"fail open off", false}}
	srv.Stop()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGate(newTestMutex(t, rdb, Config{FailOpen: tt.failOpen, OpTimeout: time.Second}))
			start := time.Now()
			e, err := g.Enter(context.Background(), "k", "")
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Fatalf("Enter took %s with Redis down", elapsed)
			}
			if tt.failOpen && (err != nil || e.Result != FailOpen) {
				t.Fatalf("Enter = %+v, %v; want FailOpen", e, err)
			}
			if !tt.failOpen && err == nil {
				t.Fatalf("Enter = %+v, want an error with fail-open off", e)
			}
		})
	}
	srv.Start()
	g := NewGate(newTestMutex(t, rdb, Config{FailOpen: true}))
	e, err := g.Enter(context.Background(), "k", "")
	if err != nil || e.Result != Acquired {
		t.Fatalf("after Redis restart Enter = %+v, %v; want Acquired", e, err)
	}
	_ = e.Lease.Release(context.Background(), Outcome{Status: StatusStored})
}

func TestGate_WaitTimeout(t *testing.T) {
	srv := testsupport.StartRedis(t)
	g := NewGate(newTestMutex(t, srv.Client(), Config{TTL: 10 * time.Second, WaitTimeout: 300 * time.Millisecond}))
	ctx := context.Background()
	holder, err := g.Enter(ctx, "k", "")
	if err != nil || holder.Result != Acquired {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Lease.Release(ctx, Outcome{Status: StatusFailed}) })
	_, err = g.Enter(ctx, "k", "")
	if !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("Enter = %v, want ErrWaitTimeout", err)
	}
}

func TestGate_WaiterFailsOpenAfterRepeatedPollFailures(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 300 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	const poll = 100 * time.Millisecond
	g := NewGate(newTestMutex(t, rdb, Config{TTL: 10 * time.Second, PollInterval: poll, FailOpen: true, OpTimeout: 500 * time.Millisecond}))
	ctx := context.Background()
	holder, err := g.Enter(ctx, "k", "")
	if err != nil || holder.Result != Acquired {
		t.Fatal(err)
	}
	result := make(chan Entry, 1)
	go func() {
		e, err := g.Enter(ctx, "k", "")
		if err != nil {
			t.Error(err)
		}
		result <- e
	}()
	time.Sleep(300 * time.Millisecond) // the waiter is subscribed and polling
	srv.Stop()
	stopped := time.Now()
	select {
	case e := <-result:
		if e.Result != FailOpen {
			t.Fatalf("waiter got %s, want FailOpen", e.Result)
		}
		if took := time.Since(stopped); took < 2*poll {
			t.Fatalf("waiter failed open after %s, on the first failed poll", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter did not fail open within 5s of Redis dying")
	}
}

// TestGate_ForgetStoredErasesOnlyThatEtag: a caller that found a stored
// artifact missing erases the marker only while it names that etag; then
// the next Enter acquires instead of reusing.
func TestGate_ForgetStoredErasesOnlyThatEtag(t *testing.T) {
	srv := testsupport.StartRedis(t)
	g := NewGate(newTestMutex(t, srv.Client(), Config{TTL: 5 * time.Second, Grace: time.Minute}))
	ctx := context.Background()
	e, err := g.Enter(ctx, "k", "")
	if err != nil || e.Result != Acquired {
		t.Fatalf("Enter = %+v, %v", e, err)
	}
	if err := e.Lease.Release(ctx, Outcome{Status: StatusStored, ETag: "new"}); err != nil {
		t.Fatal(err)
	}
	if forgot, err := g.ForgetStored(ctx, "k", "old"); err != nil || forgot {
		t.Fatalf("ForgetStored of another etag = %v, %v; want the marker kept", forgot, err)
	}
	if e, err := g.Enter(ctx, "k", ""); err != nil || e.Result != Released || e.Outcome.ETag != "new" {
		t.Fatalf("Enter after a wrong ForgetStored = %+v, %v; want Released new", e, err)
	}
	if forgot, err := g.ForgetStored(ctx, "k", "new"); err != nil || !forgot {
		t.Fatalf("ForgetStored = %v, %v; want the marker erased", forgot, err)
	}
	e, err = g.Enter(ctx, "k", "")
	if err != nil || e.Result != Acquired {
		t.Fatalf("Enter after ForgetStored = %+v, %v; want Acquired", e, err)
	}
	_ = e.Lease.Release(ctx, Outcome{Status: StatusFailed})
}
