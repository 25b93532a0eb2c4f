package testsupport

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// Redis is a private redis-server process bound to 127.0.0.1 that a test can
// crash and restart on the same port (harness.StartRedis).
type Redis struct {
	t     testing.TB
	Port  int
	dir   string
	extra []string
	srv   *harness.Redis
}

// StartRedis starts redis-server on a free port without persistence and
// stops it when the test ends.
func StartRedis(t testing.TB) *Redis { return StartRedisWith(t) }

// StartRedisWith is StartRedis with extra redis-server arguments, kept for
// every restart (for example --appendonly yes: a restart then replays the
// append-only file from the same directory).
func StartRedisWith(t testing.TB, extra ...string) *Redis {
	t.Helper()
	SkipShort(t, "redis-server")
	r := &Redis{t: t, Port: FreePort(t), dir: t.TempDir(), extra: extra}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port)) }

// URL is the redis:// URL of the server.
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// Client returns a go-redis client closed at test end.
func (r *Redis) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Start (re)starts the server on the same port and waits until it answers.
func (r *Redis) Start() {
	r.t.Helper()
	srv, err := harness.StartRedis(context.Background(), r.dir, r.Port, r.extra...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.srv = srv
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it to exit.
// Calling Stop on a stopped server does nothing.
func (r *Redis) Stop() {
	if r.srv != nil {
		r.srv.Stop()
		r.srv = nil
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	return port
}

// String describes the server for failure messages.
func (r *Redis) String() string { return fmt.Sprintf("redis-server %s", r.Addr()) }
