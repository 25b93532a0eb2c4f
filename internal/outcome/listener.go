package outcome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Listener holds one subscription to Channel for a whole process and hands
// each outcome to the waiters of its task, so a thousand waiting requests
// cost one Redis connection, not a thousand. One goroutine of its own sets
// the subscription up, started by the first Watch or Prepare, retrying until
// it is confirmed, and stays subscribed until Close; go-redis resubscribes
// after a reconnect (outcomes sent meanwhile are missed, hence waiters also
// poll). Its lock is never held across a network call: a waiter registers at
// once and waits for its outcome under its own deadline, whatever Redis or
// the other waiters do.
type Listener struct {
	rdb    redis.UniversalClient
	ctx    context.Context // the subscriber's; Close cancels it
	cancel context.CancelFunc
	ready  chan struct{}  // closed once the subscription is confirmed
	wg     sync.WaitGroup // the subscriber

	mu      sync.Mutex // short: never across I/O
	started bool
	closed  bool
	ps      *redis.PubSub // the subscription being set up or up
	waiters map[string]map[*Watch]struct{}
}

// subscribeTimeout bounds one attempt at subscribing; retryMax the pause
// between attempts.
const (
	subscribeTimeout = 10 * time.Second
	retryMax         = 30 * time.Second
)

// NewListener returns a Listener on the queue Redis; it does no I/O.
func NewListener(rdb redis.UniversalClient) *Listener {
	ctx, cancel := context.WithCancel(context.Background())
	return &Listener{rdb: rdb, ctx: ctx, cancel: cancel, ready: make(chan struct{}),
		waiters: make(map[string]map[*Watch]struct{})}
}

// Watch receives the outcome of one task.
type Watch struct {
	l      *Listener
	taskID string
	c      chan spec.Final
}

// C delivers the task's outcome, at most once.
func (w *Watch) C() <-chan spec.Final { return w.c }

// Ready is closed once the subscription is confirmed: an outcome announced
// after that is delivered on C. Read the task's state after Ready, not
// before, and nothing is missed in between; until then, poll.
func (w *Watch) Ready() <-chan struct{} { return w.l.ready }

// Stop unregisters the watch.
func (w *Watch) Stop() {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	if ws := w.l.waiters[w.taskID]; ws != nil {
		delete(ws, w)
		if len(ws) == 0 {
			delete(w.l.waiters, w.taskID)
		}
	}
}

// Watch registers interest in taskID's outcome and starts subscribing if
// nothing has; it does no I/O and fails only on a closed Listener.
func (l *Listener) Watch(taskID string) (*Watch, error) {
	w := &Watch{l: l, taskID: taskID, c: make(chan spec.Final, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("outcome: listener closed")
	}
	l.startLocked()
	ws := l.waiters[taskID]
	if ws == nil {
		ws = make(map[*Watch]struct{})
		l.waiters[taskID] = ws
	}
	ws[w] = struct{}{}
	return w, nil
}

// Prepare starts subscribing in the background, so that a Watch soon after
// finds the subscription up.
func (l *Listener) Prepare() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.startLocked()
	}
}

func (l *Listener) startLocked() {
	if !l.started {
		l.started = true
		l.wg.Go(l.run)
	}
}

// run subscribes, retrying with a growing pause, then dispatches until
// Close.
func (l *Listener) run() {
	pause := 100 * time.Millisecond
	for {
		ps, err := l.subscribe()
		if err == nil {
			close(l.ready)
			l.dispatch(ps.Channel())
			return
		}
		select {
		case <-l.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMax)
	}
}

// subscribe makes one attempt; the PubSub is in l.ps meanwhile, so Close
// can end an attempt waiting on Redis.
func (l *Listener) subscribe() (*redis.PubSub, error) {
	ctx, cancel := context.WithTimeout(l.ctx, subscribeTimeout)
	defer cancel()
	ps := l.rdb.SSubscribe(ctx) // no channel yet: no I/O
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = ps.Close()
		return nil, fmt.Errorf("outcome: listener closed")
	}
	l.ps = ps
	l.mu.Unlock()
	err := ps.SSubscribe(ctx, Channel)
	if err == nil {
		_, err = ps.Receive(ctx) // the confirmation
	}
	if err != nil {
		l.mu.Lock()
		if l.ps == ps {
			l.ps = nil
		}
		l.mu.Unlock()
		_ = ps.Close()
		return nil, fmt.Errorf("outcome: subscribing to %s: %w", Channel, err)
	}
	return ps, nil
}

func (l *Listener) dispatch(msgs <-chan *redis.Message) {
	for m := range msgs {
		var f spec.Final
		if json.Unmarshal([]byte(m.Payload), &f) != nil || f.TaskID == "" {
			continue
		}
		l.mu.Lock()
		for w := range l.waiters[f.TaskID] {
			select {
			case w.c <- f:
			default: // delivered already
			}
		}
		l.mu.Unlock()
	}
}

// Close ends the subscription, or the attempt at it, and waits for the
// subscriber goroutine.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	ps := l.ps
	l.ps = nil
	l.mu.Unlock()
	l.cancel()
	var err error
	if ps != nil {
		if err = ps.Close(); errors.Is(err, redis.ErrClosed) {
			err = nil // a failed attempt closed it meanwhile
		}
	}
	l.wg.Wait()
	return err
}
