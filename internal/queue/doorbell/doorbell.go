// Package doorbell lets an idle worker pick up a task the moment it is
// enqueued without polling Redis for it. Every enqueuer rings (Ring: one
// SPUBLISH of the queue's name on keyspace.DoorbellChannel, after the task
// is queued); a worker process holds one subscription (Bell) and, when one of its asynq
// servers found every queue empty, waits in that server's Bell.Waiter
// (asynq's Config.IdleWait, see third_party/README.md) until a ring for one
// of its queues arrives, or until the slow poll interval
// (TASK_CHECK_INTERVAL) is over.
//
// Rings are coalesced on the worker's side, so that a burst of enqueues
// (every one rings) costs an idle worker one poll per Coalesce window, not
// one per ring: a ring that arrived before the worker's last wait ended is
// dropped (the poll after that wait saw its task, queued before the ring),
// and a doorbell wake-up comes at most once per window — the first ring
// after a quiet window wakes at once, later ones at the window's end.
//
// Pub/sub is not durable: a ring sent while a worker was disconnected, before
// it subscribed, or dropped on the way is lost. That costs one poll interval,
// never a task: the worker polls anyway when the interval ends, and once
// more each time its subscription is (re)confirmed. Tasks that become due
// without an enqueue (retries, scheduled tasks moved by asynq's forwarder, a
// dashboard "Run") are picked up by that poll too.
//
// Like the render gate's releases and the final outcomes, the channel is
// sharded pub/sub (Redis ≥ 7.0), which works the same on a single node,
// Sentinel and Cluster (there it lives on one shard).
package doorbell

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/platform/subscription"
)

// Ring tells the idle workers serving queue that a task is pending there.
// It is best-effort: an enqueuer ignores its error (a lost ring costs the
// workers' poll interval).
func Ring(ctx context.Context, rdb redis.UniversalClient, queue string) error {
	return rdb.SPublish(ctx, keyspace.DoorbellChannel, queue).Err()
}

// Wake-up causes, the label values of Observer.Woken.
const (
	ByDoorbell = "doorbell" // a ring (or a (re)confirmed subscription) ended the wait
	ByTimer    = "timer"    // the poll interval ended it
)

// Observer counts what a Bell does (admin.Metrics implements it).
type Observer interface {
	// IdlePoll: the worker polled its queues and found them empty (one
	// call of Wait).
	IdlePoll()
	// Woken: a wait ended, by ByDoorbell or ByTimer.
	Woken(by string)
}

type nopObserver struct{}

func (nopObserver) IdlePoll()    {}
func (nopObserver) Woken(string) {}

// Bell is one worker's side of the doorbell: one subscription to
// keyspace.DoorbellChannel, set up in the background by Start and kept until Close (go-redis
// reconnects and resubscribes after a network failure or a failover), for
// every queue server of the process (Waiter).
type Bell struct {
	sub *subscription.Subscription
	obs Observer

	coalesce time.Duration

	mu      sync.Mutex
	waiters []*waiter
}

// waiter is one queue server's wait.
type waiter struct {
	b      *Bell
	queues map[string]bool
	// wake signals a ring to a wait in progress (at most one pending).
	wake chan struct{}

	mu sync.Mutex
	// rung is when the newest ring arrived. A ring after returned (it came
	// while the server polled or worked) ends the next wait: the task it
	// announced may have been queued after that poll looked. One before is
	// spent: the poll after that wait saw its task.
	rung time.Time
	// returned is when the last wait returned, woke when a ring last ended
	// one (only the server's one exec goroutine writes them).
	returned, woke time.Time
}

// Config configures a Bell.
type Config struct {
	RDB redis.UniversalClient // the queue Redis
	// Observer counts idle polls and wake-ups; nil: none.
	Observer Observer
	// Logger: nil, slog.Default().
	Logger *slog.Logger
	// Coalesce is the shortest time between two wake-ups by rings of one
	// waiter: the rings of a burst within it cost one poll (0:
	// DefaultCoalesce; negative: every ring wakes, none coalesced).
	Coalesce time.Duration
}

// DefaultCoalesce bounds an idle worker's polls under a stream of rings to
// 200 a second, and delays only the pick-up of a task enqueued within 5 ms
// of the previous wake-up. A window as long as the gap between a steady
// load's enqueues delays nearly every pick-up of that load by up to the
// window (BENCHMARKS.md has the figures, under load): the
// window must stay short against the gaps of a steady load, long against
// those of a burst.
const DefaultCoalesce = 5 * time.Millisecond

// New returns a Bell; it does no I/O until Start.
func New(cfg Config) *Bell {
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Coalesce == 0 {
		cfg.Coalesce = DefaultCoalesce
	}
	b := &Bell{obs: cfg.Observer, coalesce: max(cfg.Coalesce, 0)}
	b.sub = subscription.New(subscription.Config{RDB: cfg.RDB, Channel: keyspace.DoorbellChannel,
		OnMessage: func(queue string) {
			if queue != "" {
				b.ring(queue)
			}
		},
		// Every confirmation, the first and each after a reconnect, wakes
		// every waiter once: rings may have been lost meanwhile.
		OnSubscribed: func() { b.ring("") },
		Logger:       cfg.Logger.With("component", "doorbell", "meanwhile", "idle workers poll every TASK_CHECK_INTERVAL"),
	})
	return b
}

// Waiter returns the idle wait (asynq's Config.IdleWait) of a queue server
// serving queues: it returns when a ring for one of them arrives (or
// arrived since its last wait), after d, or when ctx ends. Each queue
// server of a process gets its own.
func (b *Bell) Waiter(queues ...string) func(ctx context.Context, d time.Duration) {
	w := &waiter{b: b, queues: make(map[string]bool, len(queues)), wake: make(chan struct{}, 1)}
	for _, q := range queues {
		w.queues[q] = true
	}
	b.mu.Lock()
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	return w.wait
}

// Start subscribes in the background, retrying until Close.
func (b *Bell) Start() { _ = b.sub.Start() }

// Close ends the subscription and waits for its goroutine.
func (b *Bell) Close() { _ = b.sub.Close() }

func (w *waiter) wait(ctx context.Context, d time.Duration) {
	w.b.obs.IdlePoll()
	t := time.NewTimer(d)
	defer t.Stop()
	defer func() { w.returned = time.Now() }()
	for {
		w.mu.Lock()
		rung := w.rung.After(w.returned)
		w.mu.Unlock()
		if rung {
			// Coalesce: the rings of a burst wake once per window, the
			// last of them at its end at the latest.
			if hold := time.Until(w.woke.Add(w.b.coalesce)); hold > 0 {
				h := time.NewTimer(hold)
				select {
				case <-h.C:
				case <-t.C:
				case <-ctx.Done():
					h.Stop()
					return
				}
				h.Stop()
			}
			w.woke = time.Now()
			w.b.obs.Woken(ByDoorbell)
			return
		}
		select {
		case <-w.wake: // look at rung again
		case <-t.C:
			w.b.obs.Woken(ByTimer)
			return
		case <-ctx.Done():
			return
		}
	}
}

// PollOnly is the idle wait of a worker without the doorbell
// (TASK_DOORBELL=false): it sleeps d, or until ctx ends, and counts the
// idle poll and the wake-up by timer, as a Bell would.
func PollOnly(obs Observer) func(ctx context.Context, d time.Duration) {
	if obs == nil {
		obs = nopObserver{}
	}
	return func(ctx context.Context, d time.Duration) {
		obs.IdlePoll()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			obs.Woken(ByTimer)
		case <-ctx.Done():
		}
	}
}

// ring wakes the waiters serving queue (every waiter when queue is ""),
// or keeps the ring for their next wait.
func (b *Bell) ring(queue string) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiters {
		if queue != "" && !w.queues[queue] {
			continue
		}
		w.mu.Lock()
		w.rung = now
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default: // one is pending already
		}
	}
}
