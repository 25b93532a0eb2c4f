package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
)

// Lease is a held render mutex. It renews itself every TTL/3 until Release;
// when renewal proves the lock lost, Context is cancelled with cause
// ErrLockLost. A Lease is safe for concurrent use.
type Lease struct {
	m        *Mutex
	id       string
	token    string
	fence    int64
	acquired time.Time

	ctx    context.Context
	cancel context.CancelCauseFunc

	// Renewal runs on a timer rather than a goroutine per lease: most
	// leases end long before their first renewal, and a parked goroutine
	// that Release must wake and wait for would be a sizeable part of an
	// uncontended acquire+release (BenchmarkAcquireRelease).
	mu         sync.Mutex
	timer      *time.Timer
	stopped    bool
	validUntil time.Time
	renewing   sync.WaitGroup
	once       sync.Once
	lostOnce   sync.Once
}

func (m *Mutex) newLease(parent context.Context, id, token string, fence int64) *Lease {
	ctx, cancel := context.WithCancelCause(parent)
	now := time.Now()
	l := &Lease{m: m, id: id, token: token, fence: fence, acquired: now, validUntil: now.Add(m.cfg.TTL),
		ctx: ctx, cancel: cancel}
	l.mu.Lock()
	l.timer = time.AfterFunc(m.cfg.TTL/3, l.renew)
	l.mu.Unlock()
	return l
}

// Context is done when the lease is lost (cause ErrLockLost), released, or
// the context the lock was acquired with ends. Render under it.
func (l *Lease) Context() context.Context { return l.ctx }

// Fence is the monotonic fencing token of this acquisition: a later holder of
// the same lock always has a larger one.
func (l *Lease) Fence() int64 { return l.fence }

// ID is the artifact id the lease locks.
func (l *Lease) ID() string { return l.id }

// renew extends the lease once and schedules the next renewal. Transient
// Redis errors are retried at the next tick until the lease would have
// lapsed; a token mismatch ends it at once.
func (l *Lease) renew() {
	l.mu.Lock()
	if l.stopped || l.ctx.Err() != nil {
		l.mu.Unlock()
		return
	}
	l.renewing.Add(1)
	validUntil := l.validUntil
	l.mu.Unlock()
	defer l.renewing.Done()

	if time.Now().After(validUntil) {
		l.lose("lease expired before it could be renewed")
		return
	}
	start := time.Now()
	ok, err := l.extend(l.ctx)
	switch {
	case err != nil:
		l.m.cfg.Logger.Warn("lock renewal failed, retrying", "key", l.id, "fence", l.fence, "err", err)
	case !ok:
		l.lose("another worker holds the lock")
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.validUntil = start.Add(l.m.cfg.TTL)
	}
	if !l.stopped {
		l.timer.Reset(l.m.cfg.TTL / 3)
	}
}

// stopRenewal cancels future renewals and waits for one in flight.
func (l *Lease) stopRenewal() {
	l.mu.Lock()
	l.stopped = true
	l.timer.Stop()
	l.mu.Unlock()
	l.renewing.Wait()
}

func (l *Lease) lose(why string) {
	l.lostOnce.Do(func() { l.loseOnce(why) })
}

func (l *Lease) loseOnce(why string) {
	l.m.cfg.Observer.LockLost()
	leaseLost(l.ctx, why)
	l.m.cfg.Logger.WarnContext(l.ctx, "lock lost", "key", l.id, "fence", l.fence, "reason", why,
		"held_ms", time.Since(l.acquired).Milliseconds())
	l.cancel(ErrLockLost)
}

func (l *Lease) extend(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.m.cfg.OpTimeout)
	defer cancel()
	n, err := extendScript.Run(ctx, l.m.rdb, []string{keyspace.Lock(l.id)}, l.token, l.m.cfg.TTL.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("lock: extend %s: %w", l.id, err)
	}
	return n == 1, nil
}

// Confirm proves, with one token-checked renewal, that the lease is still
// held, and returns ErrLockLost (cancelling Context) when it is not. Call it
// right before making work visible: a holder that was paused (GC, SIGSTOP, a
// slow disk) past its TTL learns here that another worker took over, instead
// of at the next scheduled renewal. A Redis error is returned as is: the
// caller cannot tell, and should not commit.
func (l *Lease) Confirm(ctx context.Context) error {
	if cause := context.Cause(l.ctx); cause != nil {
		if errors.Is(cause, ErrLockLost) {
			return ErrLockLost
		}
		return cause
	}
	ok, err := l.extend(ctx)
	if err != nil {
		return err
	}
	if !ok {
		l.lose("confirmation found another holder")
		return ErrLockLost
	}
	return nil
}

// Release stops renewal, deletes the lock if this lease still holds it,
// records the outcome for LOCK_GRACE and wakes the waiters — one script, one
// round trip. It returns ErrLockNotHeld (and changes nothing) when the lock
// was lost. ctx only bounds the call: release runs even if the render's
// context is already cancelled.
func (l *Lease) Release(ctx context.Context, o Outcome) (err error) {
	ctx, span := startRelease(ctx, l, o)
	defer func() { endRelease(span, err) }()
	l.once.Do(l.stopRenewal)
	defer l.cancel(context.Canceled)
	if errors.Is(context.Cause(l.ctx), ErrLockLost) {
		return ErrLockNotHeld
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.m.cfg.OpTimeout)
	defer cancel()
	n, err := releaseScript.Run(ctx, l.m.rdb,
		[]string{keyspace.Lock(l.id), keyspace.Done(l.id), keyspace.Released(l.id)},
		l.token, o.encode(), l.m.cfg.Grace.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("lock: release %s: %w", l.id, err)
	}
	if n == 0 {
		return ErrLockNotHeld
	}
	l.m.cfg.Logger.Debug("lock released", "key", l.id, "fence", l.fence, "outcome", string(o.Status),
		"held_ms", time.Since(l.acquired).Milliseconds())
	return nil
}
