package keyspace

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestAsynqLayout: the keys of asynq's layout that pdfexport reads by hand
// are the ones the vendored asynq writes (its internal/base cannot be
// imported), with the types and fields pdfexport reads: a real asynq client
// enqueues, a real server runs the task and writes its result, a real
// inspector archives another, all on a real redis-server. A new asynq that
// moves a key or field fails here, not in production.
func TestAsynqLayout(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	const queue = "layout"

	client := asynq.NewClientFromRedisClient(rdb)
	for _, id := range []string{"ran", "archived"} {
		if _, err := client.Enqueue(asynq.NewTask("layout:test", []byte(id)), asynq.TaskID(id), asynq.Queue(queue),
			asynq.Retention(time.Hour), asynq.MaxRetry(0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := asynq.NewInspectorFromRedisClient(rdb).ArchiveTask(queue, "archived"); err != nil {
		t.Fatal(err)
	}

	started := make(chan struct{})
	server := asynq.NewServerFromRedisClient(rdb, asynq.Config{Queues: map[string]int{queue: 1}, Concurrency: 1,
		Logger: testsupport.QuietAsynq{}, TaskCheckInterval: 50 * time.Millisecond})
	mux := asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		close(started)
		_, err := task.ResultWriter().Write([]byte("the result"))
		return err
	})
	if err := server.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never ran the task")
	}

	field := func(key, f, want string) func() error {
		return func() error {
			if got, err := rdb.HGet(ctx, key, f).Result(); err != nil || got != want {
				return fmt.Errorf("HGET %s %s = %q, %v; want %q", key, f, got, err, want)
			}
			return nil
		}
	}
	for _, tc := range []struct {
		name  string
		key   string
		typ   string
		check func() error
	}{
		{"AsynqQueues", AsynqQueues, "set", func() error {
			if ok, err := rdb.SIsMember(ctx, AsynqQueues, queue).Result(); err != nil || !ok {
				return fmt.Errorf("SISMEMBER %s %s = %v, %v", AsynqQueues, queue, ok, err)
			}
			return nil
		}},
		{"AsynqTask state and result", AsynqTask(queue, "ran"), "hash", func() error {
			if err := field(AsynqTask(queue, "ran"), AsynqTaskState, "completed")(); err != nil {
				return err
			}
			return field(AsynqTask(queue, "ran"), AsynqTaskResult, "the result")()
		}},
		{"AsynqTask archived", AsynqTask(queue, "archived"), "hash", field(AsynqTask(queue, "archived"), AsynqTaskState, "archived")},
		{"AsynqArchived", AsynqArchived(queue), "zset", func() error {
			score, err := rdb.ZScore(ctx, AsynqArchived(queue), "archived").Result()
			if err != nil || time.Since(time.Unix(int64(score), 0)).Abs() > time.Hour {
				return fmt.Errorf("ZSCORE %s archived = %v, %v; want its archive time in unix seconds", AsynqArchived(queue), score, err)
			}
			return nil
		}},
		{"AsynqServers", AsynqServers, "zset", func() error { return prefixed(ctx, rdb, AsynqServers) }},
		{"AsynqWorkers", AsynqWorkers, "zset", func() error { return prefixed(ctx, rdb, AsynqWorkers) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testsupport.Eventually(t, 30*time.Second, func() error {
				if typ, err := rdb.Type(ctx, tc.key).Result(); err != nil || typ != tc.typ {
					return fmt.Errorf("TYPE %s = %q, %v; want %s", tc.key, typ, err, tc.typ)
				}
				return tc.check()
			})
		})
	}
}

// prefixed reports whether the sorted set prefix indexes per-server keys
// that start with prefix+":", the keys bench's memory figures leave out by
// AsynqServers and AsynqWorkers.
func prefixed(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	members, err := rdb.ZRange(ctx, prefix, 0, -1).Result()
	if err != nil || len(members) == 0 {
		return fmt.Errorf("ZRANGE %s = %v, %v; want the running server's key", prefix, members, err)
	}
	for _, m := range members {
		if !strings.HasPrefix(m, prefix+":") {
			return fmt.Errorf("%s indexes %s, which does not start with %s:", prefix, m, prefix)
		}
	}
	return nil
}
