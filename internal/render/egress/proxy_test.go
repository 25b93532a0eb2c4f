package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// proxyHarness is an egress proxy with recording resolver and dialler seams.
type proxyHarness struct {
	p       *Proxy
	lookups atomic.Int64
	mu      sync.Mutex
	dialled []string
	refused []string
}

// newProxyHarness starts a proxy on allow. answer, if not nil, replaces DNS:
// it gets the host and the number of the lookup (1, 2, ...).
func newProxyHarness(t *testing.T, allow string, answer func(host string, n int64) []netip.Addr) *proxyHarness {
	t.Helper()
	h := &proxyHarness{}
	o := Options{
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			h.mu.Lock()
			h.dialled = append(h.dialled, addr)
			h.mu.Unlock()
			// Only loopback is ever dialled: 93.184.216.x stands in for a
			// public server, and a guard that lets anything else through
			// must fail the test, not send traffic off the machine.
			if ap, err := netip.ParseAddrPort(addr); err != nil || !ap.Addr().IsLoopback() {
				return nil, fmt.Errorf("test: %s is not reachable", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		OnRefuse: func(hostPort, reason string) {
			h.mu.Lock()
			h.refused = append(h.refused, hostPort+": "+reason)
			h.mu.Unlock()
		},
	}
	if answer != nil {
		o.Lookup = func(_ context.Context, host string) ([]netip.Addr, error) {
			return answer(host, h.lookups.Add(1)), nil
		}
	}
	p, err := StartProxy(allowlist.MustParse(allow), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	t.Cleanup(p.Close)
	return h
}

func (h *proxyHarness) dials() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.dialled...)
}

// proxyGet sends one plain proxy request for http://hostPort/path and returns
// the status and body.
func proxyGet(t *testing.T, proxy, hostPort string) (int, string, http.Header) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET http://%s/probe HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", hostPort, hostPort)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET via proxy: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// proxyConnect opens a CONNECT tunnel to hostPort and, when it is
// established, sends a GET through it. It returns the CONNECT status and the
// body of the tunnelled response.
func proxyConnect(t *testing.T, proxy, hostPort string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostPort, hostPort)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return resp.StatusCode, ""
	}
	fmt.Fprintf(c, "GET /tunnelled HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	inner, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("response through the tunnel: %v", err)
	}
	defer inner.Body.Close()
	body, _ := io.ReadAll(inner.Body)
	return resp.StatusCode, string(body)
}

func TestEgressProxy_NumericHostFormsAreNormalized(t *testing.T) {
	target := newSite(t, func(w http.ResponseWriter, req *http.Request) { fmt.Fprint(w, "TARGET") })
	port := strconv.Itoa(target.Listener.Addr().(*net.TCPAddr).Port)
	other := strconv.Itoa(testsupport.FreePort(t))
	spellings := []string{"127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "127.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]"}

	t.Run("refused when the address is not listed", func(t *testing.T) {
		h := newProxyHarness(t, "127.0.0.1:"+other+",localhost", nil)
		for _, s := range spellings {
			hp := s + ":" + port
			if code, _, hdr := proxyGet(t, h.p.Addr(), hp); code != http.StatusForbidden || hdr.Get(RefusedHeader) != "refused" {
				t.Errorf("GET %s: %d %q, want 403 refused", hp, code, hdr.Get(RefusedHeader))
			}
			if code, _ := proxyConnect(t, h.p.Addr(), hp); code != http.StatusForbidden {
				t.Errorf("CONNECT %s: %d, want 403", hp, code)
			}
		}
		if n := target.total(); n != 0 {
			t.Errorf("target got %d requests", n)
		}
		if d := h.dials(); len(d) != 0 {
			t.Errorf("dialled %v", d)
		}
		if got := h.p.refused.Load(); got != int64(2*len(spellings)) {
			t.Errorf("refused = %d, want %d", got, 2*len(spellings))
		}
	})
	t.Run("allowed and dialled as the canonical address when listed", func(t *testing.T) {
		h := newProxyHarness(t, "127.0.0.1:"+port, nil)
		for _, s := range spellings {
			hp := s + ":" + port
			if code, body, _ := proxyGet(t, h.p.Addr(), hp); code != http.StatusOK || body != "TARGET" {
				t.Errorf("GET %s: %d %q", hp, code, body)
			}
			if code, body := proxyConnect(t, h.p.Addr(), hp); code != http.StatusOK || body != "TARGET" {
				t.Errorf("CONNECT %s: %d %q", hp, code, body)
			}
		}
		for _, d := range h.dials() {
			if d != "127.0.0.1:"+port {
				t.Errorf("dialled %q, want 127.0.0.1:%s", d, port)
			}
		}
	})
}

func TestEgressProxy_NameMustResolveToAnAllowedAddress(t *testing.T) {
	target := newSite(t, func(w http.ResponseWriter, req *http.Request) { fmt.Fprint(w, "TARGET") })
	port := strconv.Itoa(target.Listener.Addr().(*net.TCPAddr).Port)
	loop := func(string, int64) []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} }

	t.Run("name without port resolving to loopback is refused", func(t *testing.T) {
		h := newProxyHarness(t, "rebind.test,localhost", loop)
		for _, host := range []string{"rebind.test", "localhost", "REBIND.test."} {
			if code, _, _ := proxyGet(t, h.p.Addr(), host+":"+port); code != http.StatusForbidden {
				t.Errorf("GET %s: %d, want 403", host, code)
			}
			if code, _ := proxyConnect(t, h.p.Addr(), host+":"+port); code != http.StatusForbidden {
				t.Errorf("CONNECT %s: %d, want 403", host, code)
			}
		}
		if n := target.total(); n != 0 || len(h.dials()) != 0 {
			t.Errorf("target got %d requests, dialled %v", n, h.dials())
		}
	})
	t.Run("system resolver: localhost listed without port is refused", func(t *testing.T) {
		h := newProxyHarness(t, "localhost", nil)
		if code, _ := proxyConnect(t, h.p.Addr(), "localhost:"+port); code != http.StatusForbidden {
			t.Errorf("CONNECT localhost: %d, want 403", code)
		}
		if n := target.total(); n != 0 {
			t.Errorf("target got %d requests", n)
		}
	})
	t.Run("allowed when the exact address is listed too", func(t *testing.T) {
		h := newProxyHarness(t, "rebind.test,127.0.0.1:"+port, loop)
		if code, body, _ := proxyGet(t, h.p.Addr(), "rebind.test:"+port); code != http.StatusOK || body != "TARGET" {
			t.Errorf("GET: %d %q", code, body)
		}
		if d := h.dials(); len(d) != 1 || d[0] != "127.0.0.1:"+port {
			t.Errorf("dialled %v", d)
		}
	})
	t.Run("rebinding: resolved once, the checked address is the one dialled", func(t *testing.T) {
		// The first answer is public (allowed), every later one loopback: a
		// proxy that resolved again to dial would reach the target.
		hits := target.total()
		h := newProxyHarness(t, "rebind.test", func(_ string, n int64) []netip.Addr {
			if n == 1 {
				return []netip.Addr{netip.MustParseAddr("93.184.216.7")}
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
		})
		code, _ := proxyConnect(t, h.p.Addr(), "rebind.test:"+port)
		if code != http.StatusBadGateway {
			t.Errorf("CONNECT: %d, want 502 (the public address is unreachable here)", code)
		}
		if got := h.lookups.Load(); got != 1 {
			t.Errorf("%d lookups, want 1", got)
		}
		if d := h.dials(); len(d) != 1 || d[0] != "93.184.216.7:"+port {
			t.Errorf("dialled %v, want only 93.184.216.7:%s", d, port)
		}
		// Next connection: resolves again, now to loopback, and is refused.
		if code, _ := proxyConnect(t, h.p.Addr(), "rebind.test:"+port); code != http.StatusForbidden {
			t.Errorf("second CONNECT: %d, want 403", code)
		}
		if n := target.total() - hits; n != 0 {
			t.Errorf("target got %d requests", n)
		}
	})
	t.Run("mixed answer: only the allowed address is dialled", func(t *testing.T) {
		hits := target.total()
		h := newProxyHarness(t, "rebind.test", func(string, int64) []netip.Addr {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("93.184.216.9"), netip.MustParseAddr("169.254.169.254")}
		})
		proxyConnect(t, h.p.Addr(), "rebind.test:"+port)
		if d := h.dials(); len(d) != 1 || d[0] != "93.184.216.9:"+port {
			t.Errorf("dialled %v, want only 93.184.216.9:%s", d, port)
		}
		if n := target.total() - hits; n != 0 {
			t.Errorf("target got %d requests", n)
		}
	})
}

func TestEgressProxy_RejectsMalformedAndOversizedRequests(t *testing.T) {
	h := newProxyHarness(t, "example.com", nil)
	send := func(raw string) int {
		c, err := net.Dial("tcp", h.p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, raw)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name string
		raw  string
		want int
	}{
		{"origin-form request", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"ftp scheme", "GET ftp://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", 403},
		{"CONNECT without port", "CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", 403},
		{"header over the limit", "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\nX-Big: " + strings.Repeat("a", proxyMaxHeaderBytes+8<<10) + "\r\n\r\n", 431},
	}
	for _, tc := range tests {
		if got := send(tc.raw); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	if d := h.dials(); len(d) != 0 {
		t.Errorf("dialled %v", d)
	}
}

func TestEgressProxy_CloseEndsTunnelsAndGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	// A server that accepts and holds the connection open.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held sync.WaitGroup
	held.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held.Go(func() { io.Copy(io.Discard, c); c.Close() })
		}
	})
	h := newProxyHarness(t, ln.Addr().String(), nil)
	var clients []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", h.p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", ln.Addr())
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
	}
	done := make(chan struct{})
	go func() { h.p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return with tunnels open")
	}
	for _, c := range clients {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("tunnel still open after close")
		}
		c.Close()
	}
	ln.Close()
	held.Wait()
	testsupport.Eventually(t, 5*time.Second, func() error {
		n := runtime.NumGoroutine()
		return testsupport.Unless(n <= before+1, "%d goroutines, %d before", n, before)
	})
}

// TestEgressProxy_SpecialPurposeAddressesBehindAWildcard: names under an
// allowed wildcard that resolve into special-purpose ranges (the review's
// NAT64 and 6to4 forms of 127.0.0.1 among them) are refused, named by their
// rule, and never dialled.
func TestEgressProxy_SpecialPurposeAddressesBehindAWildcard(t *testing.T) {
	answers := map[string]string{
		"nat64.example.test":   "64:ff9b::7f00:1",
		"6to4.example.test":    "2002:7f00:1::1",
		"teredo.example.test":  "2001:0:4136:e378:8000:63bf:80ff:fffe",
		"bench.example.test":   "198.18.0.1",
		"ietf.example.test":    "192.0.0.8",
		"future.example.test":  "240.0.0.1",
		"cgnat.example.test":   "100.64.0.1",
		"site.example.test":    "fec0::1",
		"compat.example.test":  "::7f00:1",
		"local64.example.test": "64:ff9b:1::7f00:1",
	}
	h := newProxyHarness(t, "*.example.test", func(host string, _ int64) []netip.Addr {
		return []netip.Addr{netip.MustParseAddr(answers[host])}
	})
	for host, addr := range answers {
		if code, _, _ := proxyGet(t, h.p.Addr(), host+":80"); code != http.StatusForbidden {
			t.Errorf("GET %s (%s): %d, want 403", host, addr, code)
		}
	}
	if d := h.dials(); len(d) != 0 {
		t.Errorf("dialled %v", d)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.refused {
		if !strings.Contains(r, "special-purpose address") {
			t.Errorf("refusal does not name the rule: %s", r)
		}
	}
	if len(h.refused) != len(answers) {
		t.Errorf("%d refusals for %d names: %v", len(h.refused), len(answers), h.refused)
	}
}

// site is a plain HTTP test server that counts its requests.
type site struct {
	*httptest.Server
	hits atomic.Int64
}

// newSite starts a site, closed at the test's end.
func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) total() int { return int(s.hits.Load()) }
