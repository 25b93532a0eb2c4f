// Package fleet is what worker processes announce about themselves in the
// queue Redis, and how an enqueuer reads it: which envelope versions the
// workers serving a queue can serve (docs/COMPATIBILITY.md).
//
// Each worker process writes pdfexport:worker:<host>:<pid> (JSON, a short
// TTL, refreshed while it runs, deleted when it stops), keyed by what
// asynq's own server registry (asynq:servers) records of every server: its
// host and process id. An enqueuer lists asynq's servers of a queue and
// reads their announcements; an asynq server without one is a worker of a
// release before announcements (commit 6484386 and earlier), which serves
// envelope version 1 only.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Interval is how often a worker refreshes its announcement, and TTL how
// long one outlives its last refresh: longer than asynq's own registry
// entry (twice its 5 s heartbeat), so a live worker never shows as older
// for want of an announcement, and short, so that a process that reuses a
// dead one's host and pid (a container restarted in its pod) inherits it
// for seconds at most (and then an envelope it cannot serve fails for good
// naming the version, never stores a PDF without what it asked: the
// worker's own check stays the backstop).
const (
	Interval = 5 * time.Second
	TTL      = 30 * time.Second
)

// Announcement is what one worker process says about itself.
type Announcement struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Version is the build's version (buildinfo), for people.
	Version string `json:"version"`
	// Envelope is the newest envelope version the process serves (it
	// serves every one from spec.MinEnvelopeVersion up to it).
	Envelope int `json:"envelope"`
	// Queues are the queues it serves.
	Queues  []string  `json:"queues"`
	Started time.Time `json:"started"`
}

// Hostname is the host name asynq records for this process's servers.
func Hostname() string {
	host, err := os.Hostname()
	if err != nil {
		return "unknown-host" // what asynq records then
	}
	return host
}

// Self is this process's announcement as a worker of this build serving
// queues.
func Self(version string, queues []string) Announcement {
	return Announcement{Host: Hostname(), PID: os.Getpid(), Version: version, Envelope: spec.EnvelopeVersion,
		Queues: slices.Sorted(slices.Values(queues)), Started: time.Now().UTC()}
}

// Announce writes a once.
func Announce(ctx context.Context, rdb redis.UniversalClient, a Announcement) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := rdb.Set(ctx, keyspace.Worker(a.Host, a.PID), b, TTL).Err(); err != nil {
		return fmt.Errorf("announcing worker %s:%d: %w", a.Host, a.PID, err)
	}
	return nil
}

// Withdraw deletes a's announcement: the process no longer serves.
func Withdraw(ctx context.Context, rdb redis.UniversalClient, a Announcement) error {
	return rdb.Del(ctx, keyspace.Worker(a.Host, a.PID)).Err()
}

// Run announces a every Interval until ctx ends, then withdraws it. A
// failed refresh is reported to onErr and retried at the next tick (the
// TTL spans several).
func Run(ctx context.Context, rdb redis.UniversalClient, a Announcement, onErr func(error)) {
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := Withdraw(wctx, rdb, a); err != nil && onErr != nil {
				onErr(err)
			}
			return
		case <-t.C:
			if err := Announce(ctx, rdb, a); err != nil && ctx.Err() == nil && onErr != nil {
				onErr(err)
			}
		}
	}
}

// Worker is one worker process serving a queue, as an enqueuer sees it.
type Worker struct {
	Host string
	PID  int
	// Version is its build's version; "" for a worker of a release before
	// announcements.
	Version string
	// Envelope is the newest envelope version it serves.
	Envelope int
}

func (w Worker) String() string {
	v := w.Version
	if v == "" {
		v = "announces no version: a release before v0.1.0"
	}
	return fmt.Sprintf("%s pid %d (%s; serves envelope versions up to %d)", w.Host, w.PID, v, w.Envelope)
}

// Older lists the worker processes serving queue that serve no envelope
// version as new as need: asynq's registered servers of that queue,
// one per process, with their announcements (none: envelope version 1).
func Older(ctx context.Context, rdb redis.UniversalClient, inspector *asynq.Inspector, queue string, need int) ([]Worker, error) {
	servers, err := inspector.Servers()
	if err != nil {
		return nil, fmt.Errorf("listing the workers: %w", err)
	}
	seen := map[string]bool{}
	var out []Worker
	for _, s := range servers {
		if _, ok := s.Queues[queue]; !ok {
			continue
		}
		key := keyspace.Worker(s.Host, s.PID)
		if seen[key] {
			continue // the process's other lane
		}
		seen[key] = true
		w := Worker{Host: s.Host, PID: s.PID, Envelope: spec.MinEnvelopeVersion}
		b, err := rdb.Get(ctx, key).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, fmt.Errorf("reading the announcement of worker %s pid %d: %w", s.Host, s.PID, err)
		default:
			var a Announcement
			if err := json.Unmarshal(b, &a); err != nil {
				return nil, fmt.Errorf("the announcement of worker %s pid %d (%s): %w", s.Host, s.PID, key, err)
			}
			w.Version, w.Envelope = a.Version, a.Envelope
		}
		if w.Envelope < need {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b Worker) int {
		return strings.Compare(a.Host+":"+strconv.Itoa(a.PID), b.Host+":"+strconv.Itoa(b.PID))
	})
	return out, nil
}

// ServedFor is how long a Checker trusts that a queue's workers serve an
// envelope version: the announcements' own Interval. Listing asynq's
// servers and reading their announcements costs an enqueue a few Redis
// commands, growing with the fleet; a worker that joins within the window
// is no worse off than one that joins between a check and the pick-up (a
// queue with a backlog makes that longer still): the worker's own check
// fails the export for good naming the version, never prints it wrong.
const ServedFor = Interval

// maxServedQueues bounds what a Checker remembers: queues are an
// operator's short list, but an enqueuer names them.
const maxServedQueues = 256

// Checker answers Older for one enqueuer, remembering for ServedFor that
// every worker of a queue served a version. A refusal is never remembered:
// a caller that waits for older workers to go sees them go at once.
type Checker struct {
	rdb       redis.UniversalClient
	inspector *asynq.Inspector
	now       func() time.Time

	mu     sync.Mutex
	served map[string]served // by queue
}

type served struct {
	envelope int
	until    time.Time
}

// NewChecker checks the workers of rdb's queues through inspector (asynq's
// server registry) and their announcements in rdb.
func NewChecker(rdb redis.UniversalClient, inspector *asynq.Inspector) *Checker {
	return &Checker{rdb: rdb, inspector: inspector, now: time.Now, served: map[string]served{}}
}

// Older is the package's Older, answered from memory while every worker of
// queue was seen serving need or newer less than ServedFor ago.
func (c *Checker) Older(ctx context.Context, queue string, need int) ([]Worker, error) {
	now := c.now()
	c.mu.Lock()
	s, ok := c.served[queue]
	c.mu.Unlock()
	if ok && s.envelope >= need && now.Before(s.until) {
		return nil, nil
	}
	older, err := Older(ctx, c.rdb, c.inspector, queue, need)
	if err != nil || len(older) > 0 {
		return older, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.served) >= maxServedQueues {
		clear(c.served)
	}
	c.served[queue] = served{envelope: need, until: now.Add(ServedFor)}
	return nil, nil
}
