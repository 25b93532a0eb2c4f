package outcome

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func setup(t *testing.T) (*testsupport.Redis, redis.UniversalClient, *Finisher) {
	t.Helper()
	srv := testsupport.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	client := asynq.NewClientFromRedisClient(rdb)
	t.Cleanup(func() { _ = rdb.Close() }) // closes client's connections too
	return srv, rdb, &Finisher{RDB: rdb, Client: client, CallbackMaxRetry: 3, Retention: time.Hour}
}

// TestListener_DeliversToEveryWaiterOfTheTask: two waiters of one task both
// get its outcome, a waiter of another task gets nothing, a stopped watch
// nothing; one subscription serves them all.
func TestListener_DeliversToEveryWaiterOfTheTask(t *testing.T) {
	srv, rdb, rep := setup(t)
	ctx := context.Background()
	l := NewListener(rdb)
	t.Cleanup(func() { _ = l.Close() })
	a1, err := l.Watch("task-a")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := l.Watch("task-a")
	b, _ := l.Watch("task-b")
	stopped, _ := l.Watch("task-a")
	stopped.Stop()
	select {
	case <-a1.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription is not confirmed after 5 s")
	}
	if _, err := rep.Finish(ctx, "default", nil, spec.Final{TaskID: "task-a", State: spec.StateFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	for i, w := range []*Watch{a1, a2} {
		select {
		case f := <-w.C():
			if f.State != spec.StateFailed || f.Error != "boom" {
				t.Errorf("waiter %d got %+v", i, f)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d got nothing", i)
		}
	}
	select {
	case f := <-b.C():
		t.Errorf("the other task's waiter got %+v", f)
	case f := <-stopped.C():
		t.Errorf("a stopped watch got %+v", f)
	case <-time.After(200 * time.Millisecond):
	}
	n, err := srv.Client().PubSubShardNumSub(ctx, keyspace.FinalChannel).Result()
	if err != nil || n[keyspace.FinalChannel] != 1 {
		t.Errorf("subscribers of %s: %v (%v), want 1 for the whole process", keyspace.FinalChannel, n, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Watch("task-c"); err == nil {
		t.Error("Watch on a closed listener succeeded")
	}
}

// TestFinish_OneCallbackPerExport: finishing the same export twice (its
// final step ran twice) enqueues one pdf:callback task, whose id is the
// delivery id and whose body is the outcome.
func TestFinish_OneCallbackPerExport(t *testing.T) {
	srv, _, rep := setup(t)
	ctx := context.Background()
	f := spec.Final{TaskID: "t-9", State: spec.StateCompleted, ManualID: "m", Version: "1", Result: &spec.Result{Pages: 2}}
	cb := &spec.Callback{URL: "https://hooks.example.com/pdf"}
	for range 2 {
		if _, err := rep.Finish(ctx, "critical", &spec.Envelope{Callback: cb}, f); err != nil {
			t.Fatal(err)
		}
	}
	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: srv.Addr()})
	defer insp.Close()
	pending, err := insp.ListPendingTasks("critical")
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending callbacks: %d (%v), want 1", len(pending), err)
	}
	var ct tasks.Callback
	var body spec.Final
	if err := json.Unmarshal(pending[0].Payload, &ct); err != nil || json.Unmarshal(ct.Body, &body) != nil {
		t.Fatalf("payload %s: %v", pending[0].Payload, err)
	}
	if pending[0].ID != CallbackTaskID("t-9") || ct.Delivery != pending[0].ID || ct.URL != cb.URL || body.TaskID != "t-9" || body.Result.Pages != 2 || pending[0].MaxRetry != 3 {
		t.Errorf("callback task %s (max retry %d): %+v, body %+v", pending[0].ID, pending[0].MaxRetry, ct, body)
	}
}

// TestListener_WatchDoesNotWaitAndCloseEndsTheSubscriber: with Redis slow to
// confirm the subscription (a proxy holds the reply back) or not there at
// all, Watch returns at once, not Ready; Close ends the attempt under way
// promptly and leaves no goroutine behind.
func TestListener_WatchDoesNotWaitAndCloseEndsTheSubscriber(t *testing.T) {
	for name, addr := range testsupport.UnconfirmingRedis(t) {
		t.Run(name, func(t *testing.T) {
			before := testsupport.Goroutines("subscription.(*Subscription)")
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
			l := NewListener(rdb)
			start := time.Now()
			w, err := l.Watch("task-a")
			if err != nil {
				t.Fatal(err)
			}
			w2, err := l.Watch("task-b")
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Errorf("two Watch calls took %s", d)
			}
			time.Sleep(300 * time.Millisecond) // subscribing, or retrying
			select {
			case <-w.Ready():
				t.Fatal("Ready without a confirmed subscription")
			default:
			}
			w2.Stop()
			start = time.Now()
			if err := l.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("Close took %s", d)
			}
			if n := testsupport.Goroutines("subscription.(*Subscription)"); n > before {
				t.Errorf("%d goroutines of the Listener after Close, %d before", n, before)
			}
			if _, err := l.Watch("task-c"); err == nil {
				t.Error("Watch on a closed listener succeeded")
			}
			w.Stop()
		})
	}
}
