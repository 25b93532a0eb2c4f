package egress

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

// The request guard, second layer: a forward proxy on 127.0.0.1 that every
// network request of the browser goes through (Chromium runs with
// --proxy-server pointing here and --proxy-bypass-list=<-loopback>, so even
// loopback is proxied). It serves plain HTTP proxy requests and CONNECT
// tunnels (https, wss, and ws, which Chromium tunnels too). For each new
// upstream connection it checks the host against the allowlist, resolves a
// name once, and dials only an address the allowlist allows for it: the
// address checked is the address dialled, which closes DNS rebinding. A
// refusal is a 403 (with header RefusedHeader) and is counted.

// Bounds of the proxy.
const (
	proxyHeaderTimeout  = 10 * time.Second // reading a request's header from Chromium
	proxyIdleTimeout    = 60 * time.Second // an idle keep-alive connection or tunnel is closed
	proxyMaxHeaderBytes = 256 << 10
	proxyUpstreamIdle   = 30 * time.Second // idle pooled upstream connections
)

// RefusedHeader marks a 403 that the proxy, not the server, answered.
const RefusedHeader = "X-Pdfexport-Egress"

// refusal is an error that makes the proxy answer 403.
type refusal = Refusal

// Proxy is the forward proxy. Start it with StartProxy; close
// stops it and waits for every goroutine it started.
type Proxy struct {
	dialer Dialer // resolves, checks and dials every upstream connection
	log    *slog.Logger

	// onRefuse, if set, sees every refusal: the URL of a plain request or
	// "CONNECT host:port" (tests).
	onRefuse func(target, reason string)

	ln  net.Listener
	srv *http.Server
	rp  *httputil.ReverseProxy
	tr  *http.Transport

	creds        Credentials     // operator rules; nil: none
	intercepting *interceptor    // certificates of tunnels opened for credentials
	tlsTr        *http.Transport // upstream of intercepted requests
	base         context.Context // canceled by close: ends requests and upgraded connections
	stop         context.CancelFunc

	refused   atomic.Int64
	connected atomic.Int64 // upstream connections dialled
	foreign   atomic.Int64 // connections refused: not from the worker's browsers
	admit     func(net.Conn) error
	lastWarn  atomic.Int64 // unix nanoseconds of the last foreign-peer warning

	unreserve func() // gives the main listener's port back to the allowlist's Reserved

	mu       sync.Mutex
	closed   bool
	tunnels  map[net.Conn]*Session // hijacked client and upstream connections, by Session (nil: none)
	sessions map[*Session]struct{} // open Session listeners
	wg       sync.WaitGroup        // Serve, handlers, tunnel copiers
}

type Options struct {
	// Lookup and Dial replace DNS and dialling (tests); nil: the system's.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnRefuse, if set, sees every refusal (tests).
	OnRefuse       func(target, reason string)
	UpstreamHeader time.Duration  // bound on waiting for a response header; 0 = none
	UpstreamRoots  *x509.CertPool // roots of intercepted upstreams; nil: the system's
	// Admit, when set, decides whether a connection to the proxy (or to a
	// session's listener) is served (PeerGuard.Admits: only the worker's
	// browsers); nil serves every local connection (tests of the proxy).
	Admit func(net.Conn) error
}

// StartProxy listens on 127.0.0.1 on a random port and serves.
// creds, if not nil, gives the requests of matching hosts their credentials.
func StartProxy(allowed allowlist.List, logger *slog.Logger, creds Credentials, o Options) (*Proxy, error) {
	icp, err := newInterceptor()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	// A page must not reach the proxy itself (nor a render's listener of
	// it): a request looped through it would come from the proxy, which the
	// peer guard cannot tell from the worker.
	if allowed.Reserved() == nil {
		allowed = allowed.WithReserved(allowlist.NewReserved())
	}
	unreserve, err := allowed.Reserved().Add("egress proxy", ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &Proxy{
		unreserve:    unreserve,
		admit:        o.Admit,
		dialer:       Dialer{List: allowed, Lookup: o.Lookup, Dial: o.Dial},
		log:          logger,
		onRefuse:     o.OnRefuse,
		ln:           ln,
		tunnels:      make(map[net.Conn]*Session),
		sessions:     make(map[*Session]struct{}),
		creds:        creds,
		intercepting: icp,
	}
	p.tlsTr = p.newUpstreamTLS(o.UpstreamRoots, o.UpstreamHeader)
	p.base, p.stop = context.WithCancel(context.Background())
	p.tr = &http.Transport{
		Proxy:                  nil,
		DialContext:            p.dialChecked,
		ForceAttemptHTTP2:      false, // plain http only: TLS goes through CONNECT
		DisableCompression:     true,  // pass the body through as the server sent it
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    6,
		IdleConnTimeout:        proxyUpstreamIdle,
		ResponseHeaderTimeout:  o.UpstreamHeader,
		MaxResponseHeaderBytes: proxyMaxHeaderBytes,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = pr.In.Host
		},
		Transport:     p.tr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler:  p.upstreamFailed,
	}
	p.srv = p.newServer(nil)
	ln = p.guard(ln)
	p.wg.Go(func() { _ = p.srv.Serve(ln) })
	return p, nil
}

// guard wraps a listener of the proxy so that only admitted peers are
// served.
func (p *Proxy) guard(ln net.Listener) net.Listener {
	if p.admit == nil {
		return ln
	}
	return guardedListener{Listener: ln, admit: p.admit, onRefuse: p.refusePeer}
}

// refusePeer counts a connection from a foreign process and logs it, at most
// every 10 s.
func (p *Proxy) refusePeer(remote string, err error) {
	n := p.foreign.Add(1)
	now := time.Now().UnixNano()
	if last := p.lastWarn.Load(); now-last > int64(10*time.Second) && p.lastWarn.CompareAndSwap(last, now) {
		p.log.Warn("egress proxy: refused a connection from a process other than the worker's browsers", "remote", remote, "refused_so_far", n, "err", err)
	}
}

// newServer is the proxy's HTTP server for the main listener (s nil) or a
// Session's.
func (p *Proxy) newServer(s *Session) *http.Server {
	return &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { p.serve(w, req, s) }),
		ReadHeaderTimeout: proxyHeaderTimeout,
		IdleTimeout:       proxyIdleTimeout,
		MaxHeaderBytes:    proxyMaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return p.base },
	}
}

// spki is the base64 SHA-256 of the interception key, which Chromium is told
// to accept.
func (p *Proxy) SPKI() string { return p.intercepting.spki }

// addr is "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Allowed is the list the proxy enforces, with the Reserved endpoints it
// refuses besides (its own listeners among them).
func (p *Proxy) Allowed() allowlist.List { return p.dialer.List }

// close stops listening, ends every request and tunnel and waits for the
// goroutines of the proxy. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for c := range p.tunnels {
		_ = c.Close()
	}
	for s := range p.sessions { // a render still running: its listener goes too
		_ = s.srv.Close()
		s.unreserve()
	}
	p.mu.Unlock()
	p.stop()
	_ = p.srv.Close() // listener and connections not hijacked
	p.tr.CloseIdleConnections()
	p.tlsTr.CloseIdleConnections()
	p.wg.Wait()
	p.tr.CloseIdleConnections() // ones a last request put back
	p.tlsTr.CloseIdleConnections()
	p.unreserve()
}

// track registers a hijacked connection so close can end it; it returns false
// (and closes c) when the proxy is closing.
func (p *Proxy) track(c net.Conn, s *Session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.tunnels[c] = s
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	if pc, ok := c.(*prefixedConn); ok {
		c = pc.Conn
	}
	p.mu.Lock()
	delete(p.tunnels, c)
	p.mu.Unlock()
	_ = c.Close()
}

// establish answers a CONNECT: it takes the browser's connection over,
// tracks it for Session s, answers 200 and returns it with the bytes the
// server read ahead put back in front. Not ok: there is nothing to serve
// (no hijacking, the proxy closing, the browser gone); the connection is
// closed. The caller untracks the connection.
func (p *Proxy) establish(w http.ResponseWriter, s *Session) (net.Conn, bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return nil, false
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		return nil, false
	}
	if !p.track(client, s) {
		return nil, false
	}
	_ = client.SetWriteDeadline(time.Now().Add(proxyHeaderTimeout))
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		p.untrack(client)
		return nil, false
	}
	_ = client.SetWriteDeadline(time.Time{})
	if n := brw.Reader.Buffered(); n > 0 {
		buffered, _ := brw.Reader.Peek(n)
		return &prefixedConn{Conn: client, r: io.MultiReader(bytes.NewReader(bytes.Clone(buffered)), client)}, true
	}
	return client, true
}

// prefixedConn reads bytes the CONNECT's reader buffered before the
// connection's own.
type prefixedConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// serve is the handler of every proxy request.
func (p *Proxy) serve(w http.ResponseWriter, req *http.Request, s *Session) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		http.Error(w, "proxy closing", http.StatusServiceUnavailable)
		return
	}
	p.wg.Add(1) // under mu: close waits only after closed is set
	p.mu.Unlock()
	defer p.wg.Done()

	if req.Method == http.MethodConnect {
		p.tunnel(w, req, s)
		return
	}
	if !req.URL.IsAbs() || req.URL.Host == "" {
		http.Error(w, "this is a forward proxy: absolute URL required", http.StatusBadRequest)
		return
	}
	scheme := strings.ToLower(req.URL.Scheme)
	if scheme != "http" && scheme != "ws" {
		p.refuse(w, req.URL.Host, "scheme "+scheme+" is not proxied")
		return
	}
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "80"
	}
	if err := p.dialer.CheckHost(host, port); err != nil {
		var rf *refusal
		errors.As(err, &rf)
		p.refuse(w, req.URL.String(), rf.Reason)
		return
	}
	if scheme == "ws" {
		req.URL.Scheme = "http"
	}
	p.credsFor(s, "http", host, port).Apply(req.Header, req.URL.Path)
	p.rp.ServeHTTP(w, req)
}

// upstreamFailed answers a failed proxied request: 403 for a refusal found
// while dialling, 502 otherwise.
func (p *Proxy) upstreamFailed(w http.ResponseWriter, req *http.Request, err error) {
	var rf *refusal
	if errors.As(err, &rf) {
		p.refuse(w, req.URL.String(), rf.Reason)
		return
	}
	if req.Context().Err() != nil {
		return // the browser went away
	}
	p.log.Debug("egress proxy: upstream failed", "url", shortURL(req.URL.String()), "err", err)
	w.Header().Set(RefusedHeader, "upstream-failed")
	http.Error(w, "upstream failed: "+err.Error(), http.StatusBadGateway)
}

func (p *Proxy) refuse(w http.ResponseWriter, target, reason string) {
	p.noteRefusal(target, reason)
	w.Header().Set(RefusedHeader, "refused")
	w.Header().Set("Connection", "close")
	http.Error(w, "refused by the pdfexport egress proxy: "+reason, http.StatusForbidden)
}

func (p *Proxy) noteRefusal(target, reason string) {
	p.refused.Add(1)
	p.log.Debug("egress proxy: refused", "target", shortURL(target), "reason", reason)
	if p.onRefuse != nil {
		p.onRefuse(target, reason)
	}
}

// resolve is the dialer's check and resolution (the guard's precheck uses it).
// Resolve resolves host as the proxy does for a connection to host:port and
// returns the addresses the allowlist allows, or a *Refusal.
func (p *Proxy) Resolve(ctx context.Context, host, port string) ([]netip.AddrPort, error) {
	return p.resolve(ctx, host, port)
}

// Refused counts the requests the proxy refused (the allowlist's
// refusals); Connected the upstream connections it dialled; Foreign the
// connections it closed because they came from a process other than the
// worker's browsers.
func (p *Proxy) Refused() int64   { return p.refused.Load() }
func (p *Proxy) Connected() int64 { return p.connected.Load() }
func (p *Proxy) Foreign() int64   { return p.foreign.Load() }

func (p *Proxy) resolve(ctx context.Context, host, port string) ([]netip.AddrPort, error) {
	return p.dialer.Resolve(ctx, host, port)
}

// dialChecked dials through the dialer and counts upstream connections.
func (p *Proxy) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := p.dialer.DialContext(ctx, network, addr)
	if err == nil {
		p.connected.Add(1)
	}
	return c, err
}

// tunnel serves CONNECT: it dials the checked target, answers 200 and copies
// bytes both ways until one side closes or both are idle for proxyIdleTimeout.
func (p *Proxy) tunnel(w http.ResponseWriter, req *http.Request, s *Session) {
	target := req.Host
	if target == "" {
		target = req.URL.Host
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		p.refuse(w, target, "CONNECT target must be host:port")
		return
	}
	// A tunnel carries TLS (https, wss): the https origin's credentials
	// decide whether it is opened.
	if !p.credsFor(s, "https", host, port).Empty() {
		p.intercept(w, req, s, host, port)
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), DefaultResolveTimeout+DefaultDialTimeout)
	up, err := p.dialChecked(ctx, "tcp", net.JoinHostPort(host, port))
	cancel()
	if err != nil {
		var rf *refusal
		if errors.As(err, &rf) {
			p.refuse(w, "CONNECT "+target, rf.Reason)
			return
		}
		p.log.Debug("egress proxy: tunnel dial failed", "target", shortURL(target), "err", err)
		http.Error(w, "upstream failed", http.StatusBadGateway)
		return
	}
	client, ok := p.establish(w, s)
	if !ok {
		_ = up.Close()
		return
	}
	defer p.untrack(client)
	if !p.track(up, s) {
		return
	}
	defer p.untrack(up)

	var last atomic.Int64 // unix nanos of the last byte moved either way
	last.Store(time.Now().UnixNano())
	var inner sync.WaitGroup
	inner.Go(func() { pipe(up, client, &last) })
	pipe(client, up, &last)
	inner.Wait()
}

// pipe copies src to dst until EOF, an error or
// proxyIdleTimeout without traffic in either direction, then closes both
// connections: a browser that closes its side is done with the tunnel, and a
// server that closes its side has sent everything.
func pipe(dst, src net.Conn, last *atomic.Int64) {
	defer func() {
		_ = dst.Close()
		_ = src.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(proxyIdleTimeout))
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			_ = dst.SetWriteDeadline(time.Now().Add(proxyIdleTimeout))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() &&
			time.Since(time.Unix(0, last.Load())) < proxyIdleTimeout {
			continue // the other direction is busy
		}
		return
	}
}

// shortURL is a URL as logs show it: redacted (no password, no query
// values) and at most 200 bytes.
func shortURL(u string) string {
	s := redact.URL(u)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
