package egress

// Source credentials in the egress proxy. Every request of the browser, from
// every frame and worker, reaches the proxy, so the proxy is the one place
// that can add credentials to all of them and to nothing else. Plain HTTP
// requests get them on the way through. An HTTPS tunnel (CONNECT) to a host
// with credentials is opened instead of tunnelled: the proxy answers the TLS
// handshake with a certificate for that host made from its own key (which
// Chromium accepts through --ignore-certificate-errors-spki-list naming that
// key, and only that key), adds the credentials to each request and sends it
// on over a new TLS connection that verifies the real server against the
// system's roots. Tunnels to hosts without credentials stay opaque.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Credentials tells the proxy what requests to an origin get (operator
// rules: sourceauth.Watcher); scheme is "https" or "http". For must be fast
// and safe for concurrent use.
type Credentials interface {
	For(scheme, host, port string) spec.Credentials
}

// maxLeafCerts bounds the cache of per-host certificates.
const maxLeafCerts = 1024

// interceptor holds the key and certificates of opened tunnels.
type interceptor struct {
	key  *ecdsa.PrivateKey
	spki string // base64 SHA-256 of the key's SubjectPublicKeyInfo, for Chromium

	mu    sync.Mutex
	certs map[string]*tls.Certificate
}

func newInterceptor() (*interceptor, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: generating the interception key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	sum := sha256.Sum256(der)
	return &interceptor{key: key, spki: base64.StdEncoding.EncodeToString(sum[:]), certs: map[string]*tls.Certificate{}}, nil
}

// cert returns a self-signed certificate for host made from the key.
func (m *interceptor) cert(host string) (*tls.Certificate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.certs[host]; ok && time.Now().Before(c.Leaf.NotAfter.Add(-time.Hour)) {
		return c, nil
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host, Organization: []string{"pdfexport egress proxy"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{a.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &m.key.PublicKey, m.key)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: certificate for %s: %w", host, err)
	}
	leaf, _ := x509.ParseCertificate(der)
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: m.key, Leaf: leaf}
	if len(m.certs) >= maxLeafCerts {
		clear(m.certs)
	}
	m.certs[host] = c
	return c, nil
}

// Session is a listener of the proxy for one render with per-export
// credentials; its browser context uses it as its proxy.
type Session struct {
	scheme, host, port string // the source URL's exact origin
	creds              spec.Credentials
	ln                 net.Listener
	srv                *http.Server
	unreserve          func() // the listener's port is the worker's own while it lives
}

// credsFor is what a request to the origin scheme://host:port gets (scheme
// "https": an intercepted tunnel; "http": a plain request): the operator's
// rules, and a Session's own credentials on its exact origin only.
func (p *Proxy) credsFor(s *Session, scheme, host, port string) spec.Credentials {
	var c spec.Credentials
	if p.creds != nil {
		c = p.creds.For(scheme, host, port)
	}
	if s != nil && s.scheme == scheme && s.port == port {
		if h, _, _ := allowlist.CanonicalHost(host); h != s.host {
			return c
		}
		c = c.Merge(s.creds)
	}
	return c
}

// openSession starts a listener whose requests also get creds on the
// origin scheme://host:port. Close it with closeSession.
func (p *Proxy) OpenSession(scheme, host, port string, creds spec.Credentials) (*Session, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy: Session listener: %w", err)
	}
	unreserve, err := p.dialer.List.Reserved().Add("egress proxy (a render's listener)", ln.Addr().String())
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("egress proxy: Session listener: %w", err)
	}
	s := &Session{scheme: scheme, host: host, port: port, creds: creds, ln: ln, unreserve: unreserve}
	s.srv = p.newServer(s)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = ln.Close()
		unreserve()
		return nil, errors.New("egress proxy: closed")
	}
	p.sessions[s] = struct{}{}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		_ = s.srv.Serve(p.guard(ln))
	}()
	return s, nil
}

func (s *Session) Addr() string { return s.ln.Addr().String() }

// closeSession stops the Session's listener and ends its requests and
// tunnels.
func (p *Proxy) CloseSession(s *Session) {
	_ = s.srv.Close()
	s.unreserve()
	p.mu.Lock()
	delete(p.sessions, s)
	for c, owner := range p.tunnels {
		if owner == s {
			_ = c.Close()
		}
	}
	p.mu.Unlock()
}

// newUpstreamTLS is the transport of intercepted requests: it dials through
// the allowlist and verifies the server's certificate.
func (p *Proxy) newUpstreamTLS(roots *x509.CertPool, headerTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := p.dialChecked(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			host, _, _ := net.SplitHostPort(addr)
			tc := tls.Client(raw, &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
			hctx, cancel := context.WithTimeout(ctx, proxyHeaderTimeout)
			defer cancel()
			if err := tc.HandshakeContext(hctx); err != nil {
				_ = raw.Close()
				return nil, fmt.Errorf("TLS with %s: %w", addr, err)
			}
			return tc, nil
		},
		ForceAttemptHTTP2:      false,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{}, // HTTP/1.1 only
		DisableCompression:     true,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    6,
		IdleConnTimeout:        proxyUpstreamIdle,
		ResponseHeaderTimeout:  headerTimeout,
		MaxResponseHeaderBytes: proxyMaxHeaderBytes,
	}
}

// intercept serves a CONNECT to host:port, whose requests get credentials,
// by terminating TLS with the browser and proxying each request.
func (p *Proxy) intercept(w http.ResponseWriter, req *http.Request, s *Session, host, port string) {
	target := net.JoinHostPort(host, port)
	if err := p.dialer.CheckHost(host, port); err != nil {
		var rf *refusal
		errors.As(err, &rf)
		p.refuse(w, "CONNECT "+target, rf.Reason)
		return
	}
	conn, ok := p.establish(w, s)
	if !ok {
		return
	}
	defer p.untrack(conn)
	cert, err := p.intercepting.cert(host)
	if err != nil {
		p.log.Warn("egress proxy: cannot intercept", "target", target, "err", err)
		return
	}
	tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	_ = conn.SetDeadline(time.Now().Add(proxyHeaderTimeout))
	if err := tc.HandshakeContext(req.Context()); err != nil {
		p.log.Debug("egress proxy: browser TLS handshake failed", "target", target, "err", err)
		return
	}
	_ = conn.SetDeadline(time.Time{})

	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "https"
			pr.Out.URL.Host = target
			pr.Out.Host = pr.In.Host
			p.credsFor(s, "https", host, port).Apply(pr.Out.Header, pr.Out.URL.Path)
		},
		Transport:     p.tlsTr,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler:  p.upstreamFailed,
	}
	one := newOneConnListener(tc)
	var handlers sync.WaitGroup // an upgraded (WebSocket) request outlives Serve
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handlers.Add(1)
			defer handlers.Done()
			rp.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: proxyHeaderTimeout,
		IdleTimeout:       proxyIdleTimeout,
		MaxHeaderBytes:    proxyMaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return p.base },
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				one.done()
			}
		},
	}
	stop := context.AfterFunc(p.base, func() { _ = srv.Close() })
	defer stop()
	_ = srv.Serve(one) // returns once the connection is closed or upgraded
	handlers.Wait()
	_ = srv.Close()
}

// oneConnListener hands out one connection, then blocks Accept until that
// connection is closed.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	served bool
	mu     sync.Mutex
	closed chan struct{}
}

func newOneConnListener(c net.Conn) *oneConnListener {
	return &oneConnListener{conn: c, closed: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.served {
		l.served = true
		l.mu.Unlock()
		return l.conn, nil
	}
	l.mu.Unlock()
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) done() { l.once.Do(func() { close(l.closed) }) }

func (l *oneConnListener) Close() error { l.done(); return nil }

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }
