package outcome

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/platform/subscription"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Listener holds one subscription to keyspace.FinalChannel for a whole
// process (internal/platform/subscription) and hands each outcome to the waiters of its
// task, so a thousand waiting requests cost one Redis connection, not a
// thousand. The subscription is started by the first Watch or Prepare and
// kept until Close; outcomes sent while it was down are missed, hence
// waiters also poll. Its lock is never held across a network call: a
// waiter registers at once and waits for its outcome under its own
// deadline, whatever Redis or the other waiters do.
type Listener struct {
	sub *subscription.Subscription

	mu      sync.Mutex // short: never across I/O
	waiters map[string]map[*Watch]struct{}
}

// NewListener returns a Listener on the queue Redis; it does no I/O.
func NewListener(rdb redis.UniversalClient) *Listener {
	l := &Listener{waiters: make(map[string]map[*Watch]struct{})}
	l.sub = subscription.New(subscription.Config{RDB: rdb, Channel: keyspace.FinalChannel, OnMessage: l.dispatch})
	return l
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
func (w *Watch) Ready() <-chan struct{} { return w.l.sub.Ready() }

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
	if err := l.sub.Start(); err != nil {
		return nil, fmt.Errorf("outcome: listener closed: %w", err)
	}
	w := &Watch{l: l, taskID: taskID, c: make(chan spec.Final, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
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
func (l *Listener) Prepare() { _ = l.sub.Start() }

func (l *Listener) dispatch(payload string) {
	var f spec.Final
	if json.Unmarshal([]byte(payload), &f) != nil || f.TaskID == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.waiters[f.TaskID] {
		select {
		case w.c <- f:
		default: // delivered already
		}
	}
}

// Close ends the subscription, or the attempt at it, and waits for its
// goroutine.
func (l *Listener) Close() error { return l.sub.Close() }
