package render

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/sourceauth"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// dualSite serves https and plain http on one port (the first byte of a
// connection tells a TLS handshake from an HTTP request), so that one
// host:port is two origins, and records what each request carried.
type dualSite struct {
	https    hitLog
	plain    hitLog
	hostPort string
}

func newDualSite(t *testing.T, certs testTLS, handler func(scheme, origin string) http.HandlerFunc) *dualSite {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &dualSite{hostPort: ln.Addr().String()}
	tlsLn := &chanListener{c: make(chan net.Conn), addr: ln.Addr()}
	plainLn := &chanListener{c: make(chan net.Conn), addr: ln.Addr()}
	serve := func(scheme string, l net.Listener, log *hitLog, wrap func(net.Listener) net.Listener) {
		h := handler(scheme, scheme+"://"+d.hostPort)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { log.add(r); h(w, r) }), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(wrap(l)) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	serve("https", tlsLn, &d.https, func(l net.Listener) net.Listener {
		return tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{certs.cert}})
	})
	serve("http", plainLn, &d.plain, func(l net.Listener) net.Listener { return l })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				br := bufio.NewReader(c)
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				first, err := br.Peek(1)
				_ = c.SetReadDeadline(time.Time{})
				if err != nil {
					_ = c.Close()
					return
				}
				pc := &peekedConn{Conn: c, r: br}
				if first[0] == 0x16 { // a TLS handshake record
					tlsLn.c <- pc
				} else {
					plainLn.c <- pc
				}
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); tlsLn.Close(); plainLn.Close() })
	return d
}

type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

type chanListener struct {
	c    chan net.Conn
	addr net.Addr
	once sync.Once
	done chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	l.once.Do(func() { l.done = make(chan struct{}) })
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { l.done = make(chan struct{}) })
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// TestRender_CredentialsStayOnTheirOrigin: credentials for https://H:P — a
// bare rule "H:P" and per-export credentials of an https source alike — go
// with every request to that origin and to no other: the page tries every
// way out toward http://H:P (same host and port, other scheme) and toward
// another port of the same host (a script navigation, a redirect, an image,
// an iframe, a fetch, a form POST), and no credential value reaches either.
// An explicit http://H:P rule does send them over plain http.
func TestRender_CredentialsStayOnTheirOrigin(t *testing.T) {
	t.Parallel()
	certs := newTestTLS(t)
	var other *dualSite
	handler := func(scheme, origin string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Access-Control-Allow-Origin", "*")
			plainSelf := "http://" + strings.TrimPrefix(origin, scheme+"://")
			switch {
			case scheme == "https" && r.URL.Path == "/manual":
				fmt.Fprintf(w, `<!doctype html><h1>MANUAL</h1>
<img src="%[1]s/img.svg"><img src="%[2]s/img.svg">
<iframe src="%[1]s/frame"></iframe><iframe src="%[2]s/frame"></iframe>
<iframe srcdoc="<form method=post action='%[1]s/form'><input name=a value=b></form><script>document.forms[0].submit()</script>"></iframe>
<script>
fetch(%[1]q + "/fetch").catch(() => {});
fetch(%[2]q + "/fetch").catch(() => {});
fetch("/redirect").catch(() => {});
setTimeout(() => { location.href = %[1]q + "/navigated"; }, 300);
</script>`, plainSelf, "https://"+other.hostPort)
			case r.URL.Path == "/redirect":
				http.Redirect(w, r, plainSelf+"/redirected", http.StatusFound)
			case r.URL.Path == "/navigated":
				fmt.Fprint(w, `<!doctype html><h1>NAVIGATED</h1><script>window.__PDF_READY__ = true</script>`)
			case strings.HasSuffix(r.URL.Path, ".svg"):
				w.Header().Set("Content-Type", "image/svg+xml")
				fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`)
			default:
				fmt.Fprint(w, "<p>"+scheme+"</p>")
			}
		}
	}
	other = newDualSite(t, certs, handler)
	site := newDualSite(t, certs, handler)
	allowed := allowlist.MustParse(site.hostPort + "," + other.hostPort)
	const token = "Bearer origin-secret"
	leaked := func(t *testing.T, logs ...*hitLog) {
		t.Helper()
		for _, l := range logs {
			for _, h := range l.all() {
				if strings.Contains(h.auth, "origin-secret") || strings.Contains(h.cookie, "origin-secret") {
					t.Errorf("%s got the credentials of another origin (auth %q)", h.path, h.auth)
				}
			}
		}
	}
	for _, from := range []string{"bare rule", "https rule", "export"} {
		t.Run(from, func(t *testing.T) {
			site.https, site.plain, other.https, other.plain = hitLog{}, hitLog{}, hitLog{}, hitLog{}
			cfg := Config{AllowedHosts: allowed, Timeout: 30 * time.Second}
			src := Source{URL: "https://" + site.hostPort + "/manual"}
			switch from {
			case "bare rule", "https rule":
				hosts := site.hostPort
				if from == "https rule" {
					hosts = "https://" + site.hostPort
				}
				rules, err := sourceauth.Parse([]byte(fmt.Sprintf(`{"rules": [{"hosts": %q, "headers": {"Authorization": %q}}]}`, hosts, token)), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				cfg.SourceAuth = rules
			default:
				src.Auth = spec.Credentials{Headers: map[string]string{"Authorization": token}}
			}
			r := newRenderer(t, cfg, func(r *Renderer) { r.hooks.proxy.UpstreamRoots, r.hooks.trustSPKI = certs.roots, []string{certs.spki} })
			out := mustRender(t, r, src, spec.Options{WaitFor: "window.__PDF_READY__ === true"}.Settings())
			if text := pdfText(t, out.pdf); !strings.Contains(text, "NAVIGATED") {
				t.Fatalf("the page did not navigate to http (PDF: %q): the test proves nothing", text)
			}
			var page bool
			for _, h := range site.https.all() {
				page = page || h.path == "/manual" && h.auth == token
			}
			if !page {
				t.Errorf("the https origin's page came without its credentials: %v", site.https.all())
			}
			if len(site.plain.all()) == 0 {
				t.Fatal("nothing reached http:// the same host and port: the test proves nothing")
			}
			leaked(t, &site.plain, &other.https, &other.plain)
		})
	}
	t.Run("explicit http rule", func(t *testing.T) {
		site.plain = hitLog{}
		rules, err := sourceauth.Parse([]byte(fmt.Sprintf(`{"rules": [{"hosts": %q, "headers": {"Authorization": %q}}]}`, "http://"+site.hostPort, token)), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := newRenderer(t, Config{AllowedHosts: allowed, Timeout: 30 * time.Second, SourceAuth: rules})
		out := mustRender(t, r, Source{URL: "http://" + site.hostPort + "/navigated"}, spec.Options{WaitFor: "window.__PDF_READY__ === true"}.Settings())
		if len(out.pdf) == 0 {
			t.Fatal("no PDF")
		}
		if hits := site.plain.all(); len(hits) == 0 || hits[0].auth != token {
			t.Errorf("an http:// rule did not apply to plain http: %v", hits)
		}
	})
}

// TestRender_ProxyServesOnlyItsBrowsers: the egress proxy adds the operator's
// credentials, so it must serve nobody but the worker's Chromium. After a
// render has shown the rule works, a client in this process (not one of the
// worker's browsers) and a process that is no child of the worker send a
// request through the proxy's address; neither is served, the site never
// sees the secret for them, and the refusals are counted.
func TestRender_ProxyServesOnlyItsBrowsers(t *testing.T) {
	t.Parallel()
	var log hitLog
	site := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		fmt.Fprint(w, `<!doctype html><h1>SERVED</h1>`)
	}), ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = site.Serve(ln) }()
	t.Cleanup(func() { _ = site.Close() })
	host := ln.Addr().String()
	const secret = "Bearer operator-secret"
	rules, err := sourceauth.Parse([]byte(fmt.Sprintf(`{"rules": [{"hosts": %q, "headers": {"Authorization": %q}}]}`, "http://"+host, secret)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(host), Timeout: 30 * time.Second, SourceAuth: rules})
	mustRender(t, r, Source{URL: "http://" + host + "/page"}, spec.Options{}.Settings())
	if hits := log.all(); len(hits) == 0 || hits[0].auth != secret {
		t.Fatalf("the browser's request did not get the rule's secret: %v", hits)
	}
	proxy := r.proxy.Load()
	proxyURL, _ := url.Parse("http://" + proxy.Addr())

	// A client in this process.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	if resp, err := c.Get("http://" + host + "/stolen-in-process"); err == nil {
		resp.Body.Close()
		t.Errorf("the proxy served a client that is not one of the worker's browsers: %d", resp.StatusCode)
	}

	// The listener of a render with per-export credentials, likewise.
	_, port, _ := net.SplitHostPort(host)
	sess, err := proxy.OpenSession("http", "127.0.0.1", port, spec.Credentials{Headers: map[string]string{"Authorization": "Bearer user-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.CloseSession(sess) })
	sessURL, _ := url.Parse("http://" + sess.Addr())
	sc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(sessURL)}}
	if resp, err := sc.Get("http://" + host + "/stolen-from-a-session"); err == nil {
		resp.Body.Close()
		t.Errorf("a render's session listener served a client that is not one of the worker's browsers: %d", resp.StatusCode)
	}

	// A process that is not a child of the worker: started through a shell
	// that exits at once, so it is reparented away from this process.
	if _, err := exec.LookPath("curl"); err == nil {
		out := filepath.Join(t.TempDir(), "curl.out")
		cmd := exec.Command("sh", "-c", fmt.Sprintf(`(curl -s -m 5 -o /dev/null -w '%%{http_code}' -x %s http://%s/stolen-by-another-process > %s 2>&1; echo done >> %s) &`,
			proxy.Addr(), host, out, out))
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		var b []byte
		testsupport.Eventually(t, 10*time.Second, func() error {
			b, _ = os.ReadFile(out)
			return testsupport.Unless(strings.Contains(string(b), "done"), "curl did not finish (its output: %q)", b)
		})
		if strings.HasPrefix(string(b), "200") {
			t.Errorf("the proxy served another local process: %q", b)
		}
	} else {
		t.Log("curl not installed: only the in-process client is tried")
	}
	for _, h := range log.all() {
		if strings.HasPrefix(h.path, "/stolen") {
			t.Errorf("the site got %s through the proxy for a foreign process (auth %q)", h.path, h.auth)
		}
	}
	if n := proxy.Foreign(); n == 0 {
		t.Error("no refusal counted")
	}
}
