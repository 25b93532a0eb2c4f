package lock

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// BenchmarkWakeLatency measures how long a waiter takes to notice a release:
// our gate (sharded pub/sub, polling only as a fallback) against a 500 ms
// polling loop, the retry strategy lock libraries such as redislock use.
// Run with -benchtime=Nx; it reports p50 and p99 in milliseconds.
func BenchmarkWakeLatency(b *testing.B) {
	srv := testsupport.StartRedis(b)
	rdb := srv.Client()
	b.Run("pubsub", func(b *testing.B) {
		g := NewGate(NewMutex(rdb, Config{TTL: 10 * time.Second, PollInterval: 2 * time.Second, Logger: quietLogger}))
		wake(b, func(ctx context.Context, id string) (func(), func(Outcome) error) {
			holder, err := g.Enter(ctx, id, "")
			if err != nil || holder.Result != Acquired {
				b.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				if e, err := g.Enter(ctx, id, ""); err != nil || e.Result != Released {
					b.Error(err, e.Result)
				}
			}()
			waitSubscribed(b, rdb, id)
			return func() { <-done }, func(o Outcome) error { return holder.Lease.Release(ctx, o) }
		})
	})
	b.Run("poll500ms", func(b *testing.B) {
		m := NewMutex(rdb, Config{TTL: 10 * time.Second, Logger: quietLogger})
		wake(b, func(ctx context.Context, id string) (func(), func(Outcome) error) {
			holder, err := m.TryAcquire(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					if rdb.Exists(ctx, keyspace.Done(id)).Val() == 1 {
						return
					}
					time.Sleep(500 * time.Millisecond)
				}
			}()
			time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond) // release at a random point of the poll cycle
			return func() { <-done }, func(o Outcome) error { return holder.Release(ctx, o) }
		})
	})
}

func wake(b *testing.B, setup func(ctx context.Context, id string) (wait func(), release func(Outcome) error)) {
	ctx := context.Background()
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		id := "wake-" + strconv.Itoa(i) + "-" + b.Name()
		wait, release := setup(ctx, id)
		start := time.Now()
		if err := release(Outcome{Status: StatusStored, ETag: "e"}); err != nil {
			b.Fatal(err)
		}
		wait()
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[(len(lat)*99)/100]), "p99-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func waitSubscribed(b *testing.B, rdb *redis.Client, id string) {
	for {
		n, err := rdb.PubSubShardNumSub(context.Background(), keyspace.Released(id)).Result()
		if err != nil {
			b.Fatal(err)
		}
		if n[keyspace.Released(id)] > 0 {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// BenchmarkAcquireRelease compares one uncontended acquire+release round
// against redislock and redsync (single pool) on the same redis-server.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := testsupport.StartRedis(b)
	rdb := srv.Client()
	ctx := context.Background()
	b.Run("pdfexport", func(b *testing.B) {
		g := NewGate(NewMutex(rdb, Config{TTL: 10 * time.Second, Logger: quietLogger}))
		for b.Loop() {
			e, err := g.Enter(ctx, "bench", "")
			if err != nil || e.Result != Acquired {
				b.Fatal(err)
			}
			if err := e.Lease.Release(ctx, Outcome{Status: StatusFailed}); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b)
	})
	b.Run("redislock", func(b *testing.B) {
		locker := redislock.New(rdb)
		for b.Loop() {
			l, err := locker.Obtain(ctx, "bench-redislock", 10*time.Second, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b)
	})
	b.Run("redsync", func(b *testing.B) {
		rs := redsync.New(goredis.NewPool(rdb))
		for b.Loop() {
			m := rs.NewMutex("bench-redsync", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
			if err := m.LockContext(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := m.UnlockContext(ctx); err != nil {
				b.Fatal(err)
			}
		}
		opsPerSec(b)
	})
}

func opsPerSec(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
