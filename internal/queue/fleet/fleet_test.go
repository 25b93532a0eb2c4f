package fleet

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// countingHook counts the commands a client sends, pipelined ones each.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

var _ redis.Hook = (*countingHook)(nil)

// TestChecker_RemembersServedVersions: a Checker answers "every worker of
// the queue serves version 2" from memory for ServedFor, with no Redis
// command, and then looks again; it never remembers a refusal, nor answers a
// newer version or another queue from what it saw.
func TestChecker_RemembersServedVersions(t *testing.T) {
	srv := testsupport.StartRedis(t)
	ctx := context.Background()
	admin := srv.Client()
	t.Cleanup(func() { _ = admin.Close() })
	hook := &countingHook{}
	rdb := srv.Client()
	rdb.AddHook(hook)
	t.Cleanup(func() { _ = rdb.Close() })

	// A real asynq server of the queue default in this process: asynq
	// registers it under this host and pid, which is what a worker of a
	// release before announcements looks like until it announces.
	server := asynq.NewServer(asynq.RedisClientOpt{Addr: srv.Addr()}, asynq.Config{Queues: map[string]int{"default": 1},
		Logger: testsupport.QuietAsynq{}})
	if err := server.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return nil })); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)
	insp := asynq.NewInspectorFromRedisClient(rdb)
	testsupport.Eventually(t, 10*time.Second, func() error {
		if s, err := insp.Servers(); err != nil || len(s) == 0 {
			return fmt.Errorf("asynq lists no server yet (%v)", err)
		}
		return nil
	})
	self := Self("v-test", []string{"default"})
	if err := Announce(ctx, admin, self); err != nil {
		t.Fatal(err)
	}

	now := time.Unix(1_700_000_000, 0)
	c := NewChecker(rdb, insp)
	c.now = func() time.Time { return now }
	older := func(queue string, need int) (workers int, commands int64) {
		t.Helper()
		before := hook.n.Load()
		got, err := c.Older(ctx, queue, need)
		if err != nil {
			t.Fatal(err)
		}
		return len(got), hook.n.Load() - before
	}

	if n, cmds := older("default", 2); n != 0 || cmds == 0 {
		t.Fatalf("first check: %d older workers, %d commands; want 0 older, looked up in Redis", n, cmds)
	}
	// The worker stops announcing: for ServedFor the Checker still trusts
	// what it saw, at no cost.
	if err := Withdraw(ctx, admin, self); err != nil {
		t.Fatal(err)
	}
	now = now.Add(ServedFor - time.Millisecond)
	if n, cmds := older("default", 2); n != 0 || cmds != 0 {
		t.Fatalf("within ServedFor: %d older workers, %d commands; want 0 and 0", n, cmds)
	}
	if n, cmds := older("default", 3); n != 1 || cmds == 0 {
		t.Fatalf("a newer version: %d older workers, %d commands; want the worker, looked up", n, cmds)
	}
	now = now.Add(time.Millisecond)
	for i := range 2 { // a refusal is looked up each time
		if n, cmds := older("default", 2); n != 1 || cmds == 0 {
			t.Fatalf("after ServedFor, check %d: %d older workers, %d commands; want the worker, looked up", i, n, cmds)
		}
	}
	// Another queue is its own entry.
	if n, cmds := older("critical", 2); n != 0 || cmds == 0 {
		t.Fatalf("another queue: %d older workers, %d commands; want 0, looked up", n, cmds)
	}
}
