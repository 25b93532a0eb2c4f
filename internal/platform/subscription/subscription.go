// Package subscription holds a process's one subscription to a sharded
// pub/sub channel (Redis ≥ 7.0; the same on a single node, Sentinel and
// Cluster) for every consumer in the process: the worker's doorbell and
// the outcome listener of an enqueuer both sit on it, so a thousand waiters
// cost one connection.
//
// One goroutine sets the subscription up, retrying with a growing pause
// (100 ms doubling to 30 s, each attempt bounded by 10 s), and then hands
// every message to OnMessage until Close. go-redis pings a quiet
// subscription every HealthCheck to find a connection that died silently,
// and reconnects and subscribes again after a failure; every confirmation,
// the first and each one after a reconnect, calls OnSubscribed, since
// messages sent in between are lost (pub/sub is not durable): consumers
// poll as well, and look again when told.
package subscription

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultHealthCheck is how long a subscription may be quiet before
// go-redis pings it (go-redis's own default is 3 s: a third of a Redis
// command a second per idle process). A broken connection that Redis or
// the network closes is noticed at once; one that dies silently costs at
// most this long until the consumers' polls.
const DefaultHealthCheck = 15 * time.Second

// attemptTimeout bounds one attempt at subscribing; retryMax the pause
// between attempts.
const (
	attemptTimeout = 10 * time.Second
	retryFirst     = 100 * time.Millisecond
	retryMax       = 30 * time.Second
)

// Config configures a Subscription.
type Config struct {
	RDB     redis.UniversalClient
	Channel string
	// OnMessage receives each message's payload, in order, on the
	// subscription's goroutine: it must not block.
	OnMessage func(payload string)
	// OnSubscribed is called at each confirmation (the first and each
	// after a reconnect), on the subscription's goroutine; nil: none.
	OnSubscribed func()
	// HealthCheck: 0, DefaultHealthCheck.
	HealthCheck time.Duration
	// Logger receives failed attempts (the consumers poll meanwhile, so
	// they are warnings); nil: none are logged.
	Logger *slog.Logger
}

// Subscription is one subscription to Config.Channel. The zero value is not
// usable: New.
type Subscription struct {
	cfg   Config
	ctx   context.Context // the subscriber's; Close cancels it
	stop  context.CancelFunc
	ready chan struct{} // closed at the first confirmation
	wg    sync.WaitGroup

	mu      sync.Mutex // short: never across I/O
	started bool
	closed  bool
	ps      *redis.PubSub // the one being set up or up, for Close
}

// New returns a Subscription; it does no I/O until Start.
func New(cfg Config) *Subscription {
	if cfg.HealthCheck <= 0 {
		cfg.HealthCheck = DefaultHealthCheck
	}
	if cfg.OnMessage == nil {
		cfg.OnMessage = func(string) {}
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Subscription{cfg: cfg, ctx: ctx, stop: stop, ready: make(chan struct{})}
}

// ErrClosed: Start after Close.
var ErrClosed = errors.New("subscription: closed")

// Start subscribes in the background, once; later calls do nothing. It does
// no I/O itself.
func (s *Subscription) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if !s.started {
		s.started = true
		s.wg.Go(s.run)
	}
	return nil
}

// Ready is closed at the first confirmation: a message published after it
// is delivered (unless the connection breaks; then OnSubscribed says so).
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Close ends the subscription, or the attempt at it, and waits for its
// goroutine.
func (s *Subscription) Close() error {
	s.mu.Lock()
	s.closed = true
	ps := s.ps
	s.ps = nil
	s.mu.Unlock()
	s.stop()
	var err error
	if ps != nil {
		if err = ps.Close(); errors.Is(err, redis.ErrClosed) {
			err = nil // an attempt that failed closed it meanwhile
		}
	}
	s.wg.Wait()
	return err
}

func (s *Subscription) run() {
	pause := retryFirst
	for {
		ps, err := s.subscribe()
		if err == nil {
			close(s.ready)
			s.listen(ps)
			s.mu.Lock()
			if s.ps == ps {
				s.ps = nil
			}
			s.mu.Unlock()
			_ = ps.Close()
			return
		}
		if s.ctx.Err() != nil {
			return
		}
		if s.cfg.Logger != nil {
			s.cfg.Logger.Warn("subscribing failed; polling meanwhile", "channel", s.cfg.Channel, "err", err, "retry_in", pause)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMax)
	}
}

// subscribe makes one attempt, up to the confirmation. The PubSub is in
// s.ps meanwhile, so Close can end an attempt waiting on Redis.
func (s *Subscription) subscribe() (*redis.PubSub, error) {
	ctx, cancel := context.WithTimeout(s.ctx, attemptTimeout)
	defer cancel()
	ps := s.cfg.RDB.SSubscribe(ctx) // no channel yet: no I/O
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ps.Close()
		return nil, ErrClosed
	}
	s.ps = ps
	s.mu.Unlock()
	err := ps.SSubscribe(ctx, s.cfg.Channel)
	if err == nil {
		_, err = ps.Receive(ctx) // the confirmation
	}
	if err != nil {
		s.mu.Lock()
		if s.ps == ps {
			s.ps = nil
		}
		s.mu.Unlock()
		_ = ps.Close()
		return nil, fmt.Errorf("subscribing to %s: %w", s.cfg.Channel, err)
	}
	if s.cfg.OnSubscribed != nil {
		s.cfg.OnSubscribed()
	}
	return ps, nil
}

// listen hands messages on until Close; confirmations after a reconnect
// call OnSubscribed.
func (s *Subscription) listen(ps *redis.PubSub) {
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(s.cfg.HealthCheck))
	for {
		select {
		case <-s.ctx.Done():
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind == "ssubscribe" && s.cfg.OnSubscribed != nil {
					s.cfg.OnSubscribed()
				}
			case *redis.Message:
				s.cfg.OnMessage(m.Payload)
			}
		}
	}
}
