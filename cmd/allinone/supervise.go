package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Grace periods of the stop: the worker finishes its renders or hands
// its tasks back within its SHUTDOWN_TIMEOUT (30 s by default), bin/api
// drains its requests, Redis exits at once without persistence.
const (
	apiGrace    = 20 * time.Second
	workerGrace = 90 * time.Second
	redisGrace  = 10 * time.Second
	redisReady  = 10 * time.Second
)

type supervisor struct {
	stderr io.Writer
	bins   binaries
}

// child is one started program and its end.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// after runs once the child has exited and been reaped.
	after func()
}

func (s *supervisor) start(name, bin string, env []string, args ...string) (*child, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, s.stderr, s.stderr
	// A child outlives a killed allinone no longer than that: the kernel
	// sends it SIGTERM when allinone's thread dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// stop sends SIGTERM and waits grace before killing.
func (c *child) stop(grace time.Duration) {
	if c.after != nil {
		defer c.after()
	}
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (s *supervisor) run(ctx context.Context, environ []string) int {
	env := environ
	var children []*child // in start order; stopped in reverse
	defer func() {
		for i := len(children) - 1; i >= 0; i-- {
			children[i].stop(graceOf(children[i].name))
		}
	}()
	if s.bins.redis != "" {
		redis, url, err := s.startRedis(ctx, env)
		if err != nil {
			fmt.Fprintf(s.stderr, "allinone: %v\n", err)
			return exitUsage
		}
		children = append(children, redis)
		env = append(env[:len(env):len(env)], "REDIS_URL="+url)
		fmt.Fprintf(s.stderr, "allinone: started a private redis-server on %s (set REDIS_URL to use a shared one)\n", url)
	}
	env = withDefault(env, "API_ADDR", DefaultAPIAddr)
	for _, p := range []struct {
		name, bin string
		env       []string
	}{{"worker", s.bins.worker, workerEnv(env)}, {"api", s.bins.api, env}} {
		c, err := s.start(p.name, p.bin, p.env)
		if err != nil {
			fmt.Fprintf(s.stderr, "allinone: %v\n", err)
			return exitUsage
		}
		children = append(children, c)
	}
	fmt.Fprintf(s.stderr, "allinone: worker and api started; api on %s\n", lookup(env, "API_ADDR"))
	return s.wait(ctx, children)
}

// wait returns when ctx ends (a signal: exitOK) or a child exits on its
// own (exitFailure); the caller stops the rest.
func (s *supervisor) wait(ctx context.Context, children []*child) int {
	exited := make(chan *child, len(children))
	stopWatch := make(chan struct{})
	defer close(stopWatch)
	for _, c := range children {
		go func() {
			select {
			case <-c.done:
				exited <- c
			case <-stopWatch:
			}
		}()
	}
	select {
	case <-ctx.Done():
		fmt.Fprintln(s.stderr, "allinone: stopping")
		return exitOK
	case c := <-exited:
		fmt.Fprintf(s.stderr, "allinone: %s exited (%v); stopping the others\n", c.name, exitDescription(c.err))
		return exitFailure
	}
}

// workerEnv is the worker's environment: without CALLBACK_SECRET, the
// CALLBACK_ALLOWED_HOSTS set for Gotenberg's webhooks (which bin/api
// delivers) stay bin/api's, since a worker that delivers /v1 callbacks
// must sign them and refuses to start without a secret.
func workerEnv(env []string) []string {
	if lookup(env, "CALLBACK_SECRET") != "" || lookup(env, "CALLBACK_ALLOWED_HOSTS") == "" {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CALLBACK_ALLOWED_HOSTS=") {
			out = append(out, kv)
		}
	}
	return out
}

func exitDescription(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func graceOf(name string) time.Duration {
	switch name {
	case "api":
		return apiGrace
	case "worker":
		return workerGrace
	}
	return redisGrace
}

// startRedis starts redis-server on a free loopback port, without
// persistence (the queue of a single container is as durable as the
// container), its files in a temporary folder, and waits until it answers.
func (s *supervisor) startRedis(ctx context.Context, env []string) (*child, string, error) {
	dir, err := os.MkdirTemp("", "pdfexport-redis-")
	if err != nil {
		return nil, "", fmt.Errorf("redis-server's folder: %w", err)
	}
	port, err := freePort()
	if err == nil {
		var c *child
		c, err = s.start("redis", s.bins.redis, env, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")
		if err == nil {
			c.after = func() { _ = os.RemoveAll(dir) }
			return s.awaitRedis(ctx, c, port)
		}
	}
	_ = os.RemoveAll(dir)
	return nil, "", err
}

func (s *supervisor) awaitRedis(ctx context.Context, c *child, port int) (*child, string, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitRedis(ctx, addr, c.done); err != nil {
		c.stop(redisGrace)
		return nil, "", fmt.Errorf("redis-server on %s: %w", addr, err)
	}
	return c, "redis://" + addr + "/0", nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("a free port for redis-server: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitRedis pings addr until it answers PONG, the server exits, or
// redisReady passes.
func waitRedis(ctx context.Context, addr string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, redisReady)
	defer cancel()
	for {
		if ping(ctx, addr) == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited before it answered")
		case <-ctx.Done():
			return fmt.Errorf("no answer: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("answered %q", line)
	}
	return nil
}
