package testsupport

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SlowProxy is a TCP proxy in front of a real server that holds back the
// server's replies (fault injection: a slow Redis, which a real redis-server
// cannot be made into). Replies wait Delay; on a connection that has sent a
// SUBSCRIBE, SSUBSCRIBE or PSUBSCRIBE they wait SubscribeDelay instead, so a
// test can slow a subscription's confirmation more than plain commands.
type SlowProxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64
	sub    atomic.Int64
	done   chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// StartSlowProxy listens on a free loopback port and forwards to target; it
// and every connection through it are closed when the test ends.
func StartSlowProxy(t testing.TB, target string) *SlowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &SlowProxy{ln: ln, target: target, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// Addr is host:port to dial instead of the target.
func (p *SlowProxy) Addr() string { return p.ln.Addr().String() }

// SetDelay sets how long each reply is held back.
func (p *SlowProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetSubscribeDelay sets how long replies on a subscribed connection are
// held back.
func (p *SlowProxy) SetSubscribeDelay(d time.Duration) { p.sub.Store(int64(d)) }

// Close stops accepting, closes every connection and waits for the copiers.
func (p *SlowProxy) Close() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *SlowProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		_ = c.Close()
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *SlowProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			_ = client.Close()
			_ = server.Close()
			return
		}
		var subscribed atomic.Bool
		p.wg.Go(func() { p.requests(client, server, &subscribed) })
		p.wg.Go(func() { p.replies(server, client, &subscribed) })
	}
}

// requests copies client → server at once, noting a subscription.
func (p *SlowProxy) requests(client, server net.Conn, subscribed *atomic.Bool) {
	defer server.Close()
	defer client.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if bytes.Contains(bytes.ToLower(buf[:n]), []byte("subscribe")) {
				subscribed.Store(true)
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// replies copies server → client, each read held back by the delay.
func (p *SlowProxy) replies(server, client net.Conn, subscribed *atomic.Bool) {
	defer client.Close()
	defer server.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			d := time.Duration(p.delay.Load())
			if subscribed.Load() {
				d = time.Duration(p.sub.Load())
			}
			if d > 0 {
				select {
				case <-time.After(d):
				case <-p.done:
					return
				}
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// UnconfirmingRedis is the pair of Redis addresses a subscriber must not
// wait on: "slow", a proxy to a real redis-server that holds back every
// SUBSCRIBE reply, and "refused", a free port nothing listens on.
func UnconfirmingRedis(t testing.TB) map[string]string {
	srv := StartRedis(t)
	proxy := StartSlowProxy(t, srv.Addr())
	proxy.SetSubscribeDelay(time.Hour)
	return map[string]string{
		"slow":    proxy.Addr(),
		"refused": "127.0.0.1:" + strconv.Itoa(FreePort(t)),
	}
}
