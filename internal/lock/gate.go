package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
)

// Result says how a caller passed the gate.
type Result int

const (
	// Acquired: the caller holds the lock and must render, then Release.
	Acquired Result = iota + 1
	// Released: another holder stored the artifact (Outcome.Status stored);
	// reuse it.
	Released
	// FailOpen: Redis is unreachable and Config.FailOpen is set; render
	// without the lock.
	FailOpen
)

func (r Result) String() string {
	switch r {
	case Acquired:
		return "acquired"
	case Released:
		return "released"
	case FailOpen:
		return "fail_open"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// maxFailedPolls is how many consecutive failed polls make a waiter fail open.
const maxFailedPolls = 3

// ErrWaitTimeout is returned by Enter when the holder neither stored nor gave
// up within Config.WaitTimeout. The task should be retried later.
var ErrWaitTimeout = errors.New("lock: timed out waiting for the render holder")

// Entry is how Enter let a caller through.
type Entry struct {
	Result  Result
	Lease   *Lease        // with Acquired
	Outcome Outcome       // with Released
	Waited  time.Duration // time spent waiting for another holder
	Cause   error         // with FailOpen: the Redis error
}

// Gate lets the first caller for an artifact in and makes the others wait
// for its release.
type Gate struct {
	m *Mutex
}

// NewGate returns a gate over m.
func NewGate(m *Mutex) *Gate { return &Gate{m: m} }

// Enter passes the gate for artifact id. The first caller gets Acquired. Others
// wait until the holder releases: outcome stored → Released; failed, or a
// lock that expired because its holder died → they race to take over, and
// exactly one gets Acquired. Waiting is bounded by Config.WaitTimeout
// (→ ErrWaitTimeout) and ctx. staleETag is for forced re-renders: a stored
// outcome with that etag is the artifact being replaced and does not end the
// wait, while a newer one (another forced render finished first) does. Pass ""
// when no artifact existed.
//
// Waiters subscribe to the release channel before they re-check the lock, so
// a release between the check and the wait is never missed; they also poll
// every PollInterval, so a lost message costs one interval.
func (g *Gate) Enter(ctx context.Context, id, staleETag string) (e Entry, err error) {
	cfg := g.m.cfg
	token := holderToken(ctx)
	start := time.Now()
	leaseCtx := ctx // the lease lives under the caller's span, not the gate's
	ctx, span := startGate(ctx, id)
	defer func() { endGate(span, e, err) }()

	rep, err := g.m.tryAcquire(ctx, id, token, staleETag)
	if err != nil {
		return g.failOpen(ctx, id, err, start)
	}
	if e, ok := g.settled(leaseCtx, id, token, rep, start); ok {
		return e, nil
	}
	cfg.Observer.LockAcquire("contended")
	gateContended(span, rep)
	cfg.Logger.Debug("lock contended, waiting for release", "key", id, "held_for_ms", rep.heldFor.Milliseconds())

	waitCtx, cancel := context.WithTimeoutCause(ctx, cfg.WaitTimeout, ErrWaitTimeout)
	defer cancel()
	sub := g.m.rdb.SSubscribe(waitCtx, keyspace.Released(id))
	defer sub.Close()
	// Receive the subscription confirmation so the subscription is live before
	// the re-check below: a release after this point is always delivered.
	if _, err := sub.Receive(waitCtx); err != nil {
		if waitCtx.Err() == nil {
			return g.failOpen(ctx, id, err, start)
		}
	}
	messages := sub.Channel(redis.WithChannelSize(4))
	poll := time.NewTimer(0)
	defer poll.Stop()
	failedPolls := 0
	for {
		select {
		case <-waitCtx.Done():
			cfg.Observer.LockWait(time.Since(start))
			if ctx.Err() != nil {
				return Entry{}, ctx.Err()
			}
			return Entry{}, fmt.Errorf("%w after %s (key %s)", ErrWaitTimeout, cfg.WaitTimeout, id)
		case msg, ok := <-messages:
			if ok {
				if o, valid := decodeOutcome(msg.Payload); valid && o.Status == StatusStored && (staleETag == "" || o.ETag != staleETag) {
					return g.released(id, o, start), nil
				}
			}
		case <-poll.C:
		}
		rep, err := g.m.tryAcquire(waitCtx, id, token, staleETag)
		if err != nil {
			if waitCtx.Err() != nil {
				continue // the select above reports timeout or cancellation
			}
			// A waiter already knows another worker is rendering, so one slow
			// or failed poll (a starved CPU, a failover) is no reason to render
			// a duplicate: it fails open only after several in a row.
			if failedPolls++; failedPolls < maxFailedPolls {
				cfg.Logger.Debug("lock poll failed, retrying", "key", id, "err", err, "failures", failedPolls)
				poll.Reset(cfg.PollInterval)
				continue
			}
			return g.failOpen(ctx, id, err, start)
		}
		failedPolls = 0
		if e, ok := g.settled(leaseCtx, id, token, rep, start); ok {
			return e, nil
		}
		wait := cfg.PollInterval
		if rep.heldFor > 0 && rep.heldFor < wait {
			wait = rep.heldFor + time.Millisecond
		}
		poll.Reset(wait)
	}
}

// ForgetStored erases the done marker of id if it still names the stored
// artifact etag (Mutex.ForgetStored): call it when that artifact is missing
// from storage, then Enter again to race for the lock.
func (g *Gate) ForgetStored(ctx context.Context, id, etag string) (bool, error) {
	return g.m.ForgetStored(ctx, id, etag)
}

// settled turns an acquire reply that ends the wait into an Entry.
func (g *Gate) settled(ctx context.Context, id, token string, rep acquireReply, start time.Time) (Entry, bool) {
	switch {
	case rep.acquired:
		waited := time.Since(start)
		g.m.cfg.Observer.LockAcquire("acquired")
		g.m.cfg.Observer.LockWait(waited)
		g.m.cfg.Logger.Debug("lock acquired", "key", id, "fence", rep.fence, "waited_ms", waited.Milliseconds())
		return Entry{Result: Acquired, Lease: g.m.newLease(ctx, id, token, rep.fence), Waited: waited}, true
	case rep.done != nil:
		return g.released(id, *rep.done, start), true
	}
	return Entry{}, false
}

func (g *Gate) released(id string, o Outcome, start time.Time) Entry {
	waited := time.Since(start)
	g.m.cfg.Observer.LockWait(waited)
	g.m.cfg.Logger.Debug("lock released by another worker", "key", id, "outcome", string(o.Status), "waited_ms", waited.Milliseconds())
	return Entry{Result: Released, Outcome: o, Waited: waited}
}

func (g *Gate) failOpen(ctx context.Context, id string, err error, start time.Time) (Entry, error) {
	if ctx.Err() != nil {
		return Entry{}, ctx.Err()
	}
	if !g.m.cfg.FailOpen || !isRedisUnavailable(err) {
		return Entry{}, err
	}
	g.m.cfg.Observer.LockAcquire("fail_open")
	g.m.cfg.Logger.WarnContext(ctx, "lock unavailable, rendering without it (fail open)", "key", id, "err", err)
	return Entry{Result: FailOpen, Cause: err, Waited: time.Since(start)}, nil
}
