package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
)

// Sentinel errors callers branch on.
var (
	// ErrNotAcquired: another holder has the lock (contention, not a failure).
	ErrNotAcquired = errors.New("lock: held by another worker")
	// ErrLockLost is the cause of a lease context's cancellation when renewal
	// proves another token holds the lock or the lease expired.
	ErrLockLost = errors.New("lock: lease lost")
	// ErrLockNotHeld: Release or Extend of a lock this lease no longer holds;
	// nothing was changed.
	ErrLockNotHeld = errors.New("lock: not held")
)

// Config tunes the mutex and the gate. Zero values take the defaults shown.
type Config struct {
	TTL          time.Duration // lease length (LOCK_TTL), default 30s; renewed every TTL/3
	WaitTimeout  time.Duration // longest a waiter waits (LOCK_WAIT_TIMEOUT), default 5m
	Grace        time.Duration // how long the done marker is kept (LOCK_GRACE), default 10m
	PollInterval time.Duration // waiter's fallback poll when no message comes, default 250ms
	OpTimeout    time.Duration // bound on one Redis round trip, default 2s
	FailOpen     bool          // Redis errors on acquire → FailOpen instead of an error
	Logger       *slog.Logger
	Observer     Observer // nil → no metrics
}

// Observer receives lock events for metrics. Implementations must be fast.
type Observer interface {
	LockAcquire(result string) // acquired | contended | fail_open
	LockWait(d time.Duration)
	LockLost()
}

func (c Config) withDefaults() Config {
	if c.TTL <= 0 {
		c.TTL = 30 * time.Second
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = 5 * time.Minute
	}
	if c.Grace <= 0 {
		c.Grace = 10 * time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 250 * time.Millisecond
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	return c
}

type nopObserver struct{}

func (nopObserver) LockAcquire(string)     {}
func (nopObserver) LockWait(time.Duration) {}
func (nopObserver) LockLost()              {}

// Mutex is the per-artifact render mutex on one Redis deployment.
type Mutex struct {
	rdb redis.UniversalClient
	cfg Config
}

// NewMutex returns a Mutex on rdb. rdb may be a single-node, Sentinel or
// Cluster client.
func NewMutex(rdb redis.UniversalClient, cfg Config) *Mutex {
	return &Mutex{rdb: rdb, cfg: cfg.withDefaults()}
}

// Config returns the effective configuration (defaults applied).
func (m *Mutex) Config() Config { return m.cfg }

// acquireScript takes the lock if it is free, in one round trip.
//
//	KEYS[1] lock key   KEYS[2] fence counter   KEYS[3] done marker
//	ARGV[1] token      ARGV[2] ttl in ms
//	ARGV[3] stale etag: a stored outcome with this etag is the artifact being
//	        replaced (force), not a reason to stop; "" honours every stored
//	        outcome, "*" ignores the done marker altogether
//	ARGV[4] fence key lifetime in ms
//
// Returns {1, fence} when acquired, {0, pttl, token} when held by another
// token (the holder's, which may name its span: holderToken), {2, done} when
// the last holder stored the artifact.
var acquireScript = redis.NewScript(`
local done = redis.call("GET", KEYS[3])
if ARGV[3] ~= "*" and done and string.sub(done, 1, 7) == "stored:" and done ~= "stored:" .. ARGV[3] then
  return {2, done}
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  local fence = redis.call("INCR", KEYS[2])
  redis.call("PEXPIRE", KEYS[2], ARGV[4])
  return {1, fence}
end
return {0, redis.call("PTTL", KEYS[1]), redis.call("GET", KEYS[1])}
`)

// fenceLifetime bounds how long an idle fence counter is kept. No lease can
// outlive it, so a counter restarting from 1 afterwards cannot be confused
// with a live holder's token.
const fenceLifetime = 7 * 24 * time.Hour

type acquireReply struct {
	acquired bool
	fence    int64
	done     *Outcome
	heldFor  time.Duration
	holder   string // the holder's token, when held by another
}

func (m *Mutex) tryAcquire(ctx context.Context, id, token, staleETag string) (acquireReply, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.OpTimeout)
	defer cancel()
	res, err := acquireScript.Run(ctx, m.rdb,
		[]string{keyspace.Lock(id), keyspace.Fence(id), keyspace.Done(id)},
		token, m.cfg.TTL.Milliseconds(), staleETag, fenceLifetime.Milliseconds()).Slice()
	if err != nil {
		return acquireReply{}, fmt.Errorf("lock: acquire %s: %w", id, err)
	}
	if len(res) < 2 {
		return acquireReply{}, fmt.Errorf("lock: acquire %s: unexpected reply %v", id, res)
	}
	code, _ := res[0].(int64)
	switch code {
	case 1:
		fence, _ := res[1].(int64)
		return acquireReply{acquired: true, fence: fence}, nil
	case 2:
		s, _ := res[1].(string)
		if o, ok := decodeOutcome(s); ok {
			return acquireReply{done: &o}, nil
		}
		return acquireReply{}, fmt.Errorf("lock: acquire %s: malformed done marker %q", id, s)
	default:
		pttl, _ := res[1].(int64)
		rep := acquireReply{heldFor: time.Duration(pttl) * time.Millisecond}
		if len(res) > 2 {
			rep.holder, _ = res[2].(string)
		}
		return rep, nil
	}
}

// TryAcquire takes the lock for id once, without waiting, whatever the last
// release recorded. It returns ErrNotAcquired when another token holds it. The lease renews itself until
// Release; its Context is cancelled with cause ErrLockLost if renewal proves
// the lock lost.
func (m *Mutex) TryAcquire(ctx context.Context, id string) (*Lease, error) {
	token := newToken()
	rep, err := m.tryAcquire(ctx, id, token, "*")
	if err != nil {
		return nil, err
	}
	if !rep.acquired {
		return nil, ErrNotAcquired
	}
	return m.newLease(ctx, id, token, rep.fence), nil
}

// releaseScript deletes the lock, records the outcome and announces it, only
// when the caller still holds the lock. The channel is sharded pub/sub
// (SPUBLISH, Redis ≥ 7.0) and hash-tagged like the keys, so on Redis Cluster
// the message is published on the shard that owns the lock and the script
// touches one slot.
//
//	KEYS[1] lock key   KEYS[2] done marker   KEYS[3] release channel
//	ARGV[1] token      ARGV[2] encoded outcome   ARGV[3] grace in ms
//
// Returns 1 when released, 0 when the token no longer holds the lock.
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call("DEL", KEYS[1])
redis.call("SET", KEYS[2], ARGV[2], "PX", ARGV[3])
redis.call("SPUBLISH", KEYS[3], ARGV[2])
return 1
`)

// forgetStoredScript deletes the done marker only while it still records the
// stored artifact with the given etag, so a newer release is never erased.
//
//	KEYS[1] done marker   ARGV[1] encoded stored outcome
//
// Returns 1 when deleted, 0 when the marker says something else (or nothing).
var forgetStoredScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  return 1
end
return 0
`)

// ForgetStored erases the done marker of id if it still says that the
// artifact with etag is stored: for a caller that found that artifact gone
// (deleted by an operator or a lifecycle rule, or a store that another disk
// replaced). Waiters then race for the lock instead of reusing nothing. It
// reports whether the marker was erased.
func (m *Mutex) ForgetStored(ctx context.Context, id, etag string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.OpTimeout)
	defer cancel()
	n, err := forgetStoredScript.Run(ctx, m.rdb, []string{keyspace.Done(id)}, Outcome{Status: StatusStored, ETag: etag}.encode()).Int64()
	if err != nil {
		return false, fmt.Errorf("lock: forgetting the stored outcome of %s: %w", id, err)
	}
	return n == 1, nil
}

// extendScript resets the lease's TTL when the caller still holds the lock.
//
//	KEYS[1] lock key   ARGV[1] token   ARGV[2] ttl in ms
//
// Returns 1 when extended, 0 when the token no longer holds the lock.
var extendScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
`)

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// isRedisUnavailable tells infrastructure failures (connection refused,
// timeouts, a closed pool) from replies. Only these may fail open.
func isRedisUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var redisErr redis.Error
	if errors.As(err, &redisErr) {
		// A reply from the server (e.g. NOSCRIPT, WRONGTYPE, LOADING) is not an
		// outage, except the ones that say the server cannot serve right now.
		msg := redisErr.Error()
		for _, prefix := range []string{"LOADING", "CLUSTERDOWN", "READONLY", "MASTERDOWN", "TRYAGAIN"} {
			if strings.HasPrefix(msg, prefix) {
				return true
			}
		}
		return false
	}
	return true
}
