package outcome

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Listener holds one subscription to Channel for a whole process and hands
// each outcome to the waiters of its task, so a thousand waiting requests
// cost one Redis connection, not a thousand. It subscribes on the first
// Watch and stays subscribed until Close; go-redis resubscribes after a
// reconnect (outcomes sent meanwhile are missed, hence waiters also poll).
type Listener struct {
	rdb redis.UniversalClient

	mu      sync.Mutex
	ps      *redis.PubSub
	closed  bool
	waiters map[string]map[*Watch]struct{}
	done    chan struct{} // closed when the dispatch loop ends

	preparing bool
	wg        sync.WaitGroup // Prepare's subscriber
}

// NewListener returns a Listener on the queue Redis; it does no I/O.
func NewListener(rdb redis.UniversalClient) *Listener {
	return &Listener{rdb: rdb, waiters: make(map[string]map[*Watch]struct{})}
}

// Watch receives the outcome of one task.
type Watch struct {
	l      *Listener
	taskID string
	c      chan spec.Final
}

// C delivers the task's outcome, at most once.
func (w *Watch) C() <-chan spec.Final { return w.c }

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

// Watch registers interest in taskID's outcome. It returns once the
// subscription is confirmed, so an outcome announced after Watch returns is
// delivered: read the task's state after Watch, not before, and nothing is
// missed in between.
func (l *Listener) Watch(ctx context.Context, taskID string) (*Watch, error) {
	if err := l.subscribe(ctx); err != nil {
		return nil, err
	}
	w := &Watch{l: l, taskID: taskID, c: make(chan spec.Final, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("outcome: listener closed")
	}
	ws := l.waiters[taskID]
	if ws == nil {
		ws = make(map[*Watch]struct{})
		l.waiters[taskID] = ws
	}
	ws[w] = struct{}{}
	return w, nil
}

// Prepare subscribes in the background, so that a Watch soon after finds
// the subscription up (bounded by 5 s; an error is Watch's to report).
func (l *Listener) Prepare() {
	l.mu.Lock()
	ready := l.ps != nil || l.closed || l.preparing
	l.preparing = true
	l.mu.Unlock()
	if ready {
		return
	}
	l.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.subscribe(ctx)
	})
}

func (l *Listener) subscribe(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("outcome: listener closed")
	}
	if l.ps != nil {
		return nil
	}
	ps := l.rdb.SSubscribe(ctx, Channel)
	if _, err := ps.Receive(ctx); err != nil { // the confirmation
		_ = ps.Close()
		return fmt.Errorf("outcome: subscribing to %s: %w", Channel, err)
	}
	l.ps, l.done = ps, make(chan struct{})
	go l.dispatch(ps.Channel(), l.done)
	return nil
}

func (l *Listener) dispatch(msgs <-chan *redis.Message, done chan struct{}) {
	defer close(done)
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

// Close ends the subscription and waits for the dispatch loop.
func (l *Listener) Close() error {
	l.wg.Wait()
	l.mu.Lock()
	l.closed = true
	ps, done := l.ps, l.done
	l.mu.Unlock()
	if ps == nil {
		return nil
	}
	err := ps.Close()
	<-done
	return err
}
