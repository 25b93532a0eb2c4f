package testsupport

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/harness"
)

// Redis is a private redis-server process bound to 127.0.0.1.
type Redis struct {
	t    testing.TB
	Port int
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts redis-server on a free port without persistence and
// stops it when the test ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found on PATH: run `make setup` (apt-get install redis-server)")
	}
	r := &Redis{t: t, Port: FreePort(t), dir: t.TempDir()}
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
	r.cmd = exec.Command("redis-server",
		"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir,
		"--logfile", filepath.Join(r.dir, "redis.log"))
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("starting redis-server: %v", err)
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(r.cmd, r.done)
	c := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			r.t.Fatalf("redis-server on %s did not answer within 10s: %v\n%s", r.Addr(), err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it to exit.
// Calling Stop on a stopped server does nothing.
func (r *Redis) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
	default:
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	}
	r.cmd = nil
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
