package subscription_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/subscription"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// recorder collects what a Subscription hands on.
type recorder struct {
	mu         sync.Mutex
	messages   []string
	subscribed int
	changed    chan struct{}
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 100)} }

func (r *recorder) message(p string) {
	r.mu.Lock()
	r.messages = append(r.messages, p)
	r.mu.Unlock()
	r.changed <- struct{}{}
}

func (r *recorder) confirmed() {
	r.mu.Lock()
	r.subscribed++
	r.mu.Unlock()
	r.changed <- struct{}{}
}

// await waits until cond holds over the recorder.
func (r *recorder) await(t *testing.T, what string, d time.Duration, cond func(msgs []string, subscribed int) bool) {
	t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		ok := cond(r.messages, r.subscribed)
		msgs, subs := append([]string(nil), r.messages...), r.subscribed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("%s: after %v, messages %q, %d confirmations", what, d, msgs, subs)
		}
	}
}

func start(t *testing.T, rdb redis.UniversalClient, channel string) (*subscription.Subscription, *recorder) {
	t.Helper()
	r := newRecorder()
	s := subscription.New(subscription.Config{RDB: rdb, Channel: channel, OnMessage: r.message, OnSubscribed: r.confirmed})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("not Ready after 10 s")
	}
	return s, r
}

// TestSubscription_DeliversInOrder: on a single node and on a Cluster
// (sharded pub/sub), the first confirmation is reported, then every
// message of the channel, in order, and none of another channel.
func TestSubscription_DeliversInOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		rdb  func(t *testing.T) redis.UniversalClient
	}{
		{"single node", func(t *testing.T) redis.UniversalClient { return testsupport.StartRedis(t).Client() }},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			if testing.Short() {
				t.Skip("Redis Cluster")
			}
			return testsupport.StartRedisCluster(t).Client(t)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := tc.rdb(t)
			_, r := start(t, rdb, "test:channel")
			ctx := context.Background()
			for i := range 5 {
				if err := rdb.SPublish(ctx, "test:channel", strconv.Itoa(i)).Err(); err != nil {
					t.Fatal(err)
				}
				if err := rdb.SPublish(ctx, "test:other", "x").Err(); err != nil {
					t.Fatal(err)
				}
			}
			r.await(t, "five messages", 5*time.Second, func(m []string, subs int) bool { return len(m) >= 5 })
			r.mu.Lock()
			defer r.mu.Unlock()
			if strings.Join(r.messages, ",") != "0,1,2,3,4" || r.subscribed != 1 {
				t.Errorf("messages %q, %d confirmations; want 0–4 in order and 1", r.messages, r.subscribed)
			}
		})
	}
}

// TestSubscription_ResubscribesAfterARedisRestart: a restart drops the
// subscription; the new confirmation is reported (messages may have been
// lost), and messages flow again.
func TestSubscription_ResubscribesAfterARedisRestart(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	_, r := start(t, rdb, "test:channel")
	r.await(t, "the first confirmation", time.Second, func(_ []string, subs int) bool { return subs == 1 })
	srv.Stop()
	srv.Start()
	r.await(t, "the confirmation after the restart", 20*time.Second, func(_ []string, subs int) bool { return subs == 2 })
	if err := rdb.SPublish(context.Background(), "test:channel", "after").Err(); err != nil {
		t.Fatal(err)
	}
	r.await(t, "a message after the restart", 5*time.Second, func(m []string, _ int) bool { return len(m) == 1 && m[0] == "after" })
}

// TestSubscription_CloseEndsAnAttempt: with Redis slow to confirm (a proxy
// holds the reply back) or not there at all, the subscription is not
// Ready, Close ends the attempt under way promptly and leaves no goroutine
// behind, and Start after Close fails.
func TestSubscription_CloseEndsAnAttempt(t *testing.T) {
	for name, addr := range testsupport.UnconfirmingRedis(t) {
		t.Run(name, func(t *testing.T) {
			before := testsupport.Goroutines("subscription.(*Subscription)")
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
			s := subscription.New(subscription.Config{RDB: rdb, Channel: "test:channel"})
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // subscribing, or retrying
			select {
			case <-s.Ready():
				t.Fatal("Ready without a confirmed subscription")
			default:
			}
			if n := testsupport.Goroutines("subscription.(*Subscription)"); n <= before {
				t.Fatalf("no subscriber goroutine while subscribing (%d, %d before)", n, before)
			}
			started := time.Now()
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if d := time.Since(started); d > time.Second {
				t.Errorf("Close took %s", d)
			}
			if n := testsupport.Goroutines("subscription.(*Subscription)"); n > before {
				t.Errorf("%d subscriber goroutines after Close, %d before", n, before)
			}
			if err := s.Start(); !errors.Is(err, subscription.ErrClosed) {
				t.Errorf("Start after Close = %v, want ErrClosed", err)
			}
		})
	}
}
