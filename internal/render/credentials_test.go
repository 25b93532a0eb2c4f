package render

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/sourceauth"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// testTLS is the test PKI's CA as roots, and its server certificate for
// 127.0.0.1 and localhost.
type testTLS struct {
	roots *x509.CertPool
	cert  tls.Certificate
	spki  string // of the server key, for Chromium's tunnels that are not opened
}

func newTestTLS(t testing.TB) testTLS {
	t.Helper()
	pki := testsupport.NewTLSFiles(t)
	cert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate in " + pki.CA)
	}
	sum := sha256.Sum256(cert.Leaf.RawSubjectPublicKeyInfo)
	return testTLS{roots: roots, cert: cert, spki: base64.StdEncoding.EncodeToString(sum[:])}
}

// hitLog records what credentials each request to a server carried.
type hitLog struct {
	mu   sync.Mutex
	hits []hit
}

type hit struct{ path, auth, cookie string }

func (l *hitLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hits = append(l.hits, hit{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Cookie")})
}

func (l *hitLog) all() []hit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]hit(nil), l.hits...)
}

// privateSites: docs (https://127.0.0.1:P) answers only requests with the
// token and session cookie; other (https://localhost:Q) is a second allowed
// host, another site, that frames and is framed by docs' page.
type privateSites struct {
	docs, other       *httptest.Server
	docsLog, otherLog hitLog
}

const (
	testToken   = "Bearer s3cret-token"
	testSession = "session=abc123"
)

func newPrivateSites(t *testing.T, certs testTLS) *privateSites {
	t.Helper()
	s := &privateSites{}
	start := func(h http.HandlerFunc) *httptest.Server {
		srv := httptest.NewUnstartedServer(h)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{certs.cert}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	var otherURL string
	s.docs = start(func(w http.ResponseWriter, r *http.Request) {
		s.docsLog.add(r)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Header.Get("Authorization") != testToken || !strings.Contains(r.Header.Get("Cookie"), testSession) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, "LOGIN-REQUIRED")
			return
		}
		switch r.URL.Path {
		case "/manual":
			fmt.Fprintf(w, `<!doctype html><title>private</title><h1>PRIVATE-PAGE</h1>
<p id="data">waiting</p><p id="worker">waiting</p>
<img src="/img/diagram.svg" onload="document.title += ' img-ok'">
<iframe src="%[1]s/frame" width="400" height="120"></iframe>
<script>
fetch("/api/data").then(r => r.text()).then(t => document.getElementById("data").textContent = t);
fetch(%[1]q + "/from-page").catch(() => {});
const wk = new Worker("/worker.js");
wk.onmessage = e => { document.getElementById("worker").textContent = e.data; document.body.insertAdjacentHTML("beforeend", "<p id=done>ALL-DONE</p>"); };
</script>`, otherURL)
		case "/api/data":
			fmt.Fprint(w, "DATA-OK")
		case "/worker.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `fetch("/api/from-worker").then(r => r.text()).then(t => postMessage("WORKER-" + t), () => postMessage("WORKER-FAILED"));`)
		case "/api/from-worker":
			fmt.Fprint(w, "OK")
		case "/img/diagram.svg", "/img/from-frame.svg":
			w.Header().Set("Content-Type", "image/svg+xml")
			fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`)
		default:
			http.NotFound(w, r)
		}
	})
	docsURL := s.docs.URL
	s.other = start(func(w http.ResponseWriter, r *http.Request) {
		s.otherLog.add(r)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch r.URL.Path {
		case "/frame":
			fmt.Fprintf(w, `<!doctype html><p>FRAME-OK</p><img src="%s/img/from-frame.svg">`, docsURL)
		default:
			fmt.Fprint(w, "OTHER")
		}
	})
	otherURL = strings.Replace(s.other.URL, "127.0.0.1", "localhost", 1)
	return s
}

func (s *privateSites) allowlist() allowlist.List {
	_, dp, _ := net.SplitHostPort(s.docs.Listener.Addr().String())
	_, op, _ := net.SplitHostPort(s.other.Listener.Addr().String())
	// localhost:Q lets the name through; the proxy dials 127.0.0.1:Q only
	// because that exact address is listed too.
	return allowlist.MustParse("127.0.0.1:" + dp + ",localhost:" + op + ",127.0.0.1:" + op)
}

// TestRender_SourceCredentials: a private page renders with its login,
// whether the operator's rules (SOURCE_AUTH_FILE) or the export itself
// bring it; every request to the private host carries the header and the
// cookie (the page's, its image's, a script's fetch, a dedicated worker's,
// and the image a cross-site iframe loads from the private host, which runs
// out of process on the full browser), and the second allowed host never
// receives either. Cookie paths hold: the /api cookie reaches only /api.
func TestRender_SourceCredentials(t *testing.T) {
	t.Parallel()
	certs := newTestTLS(t)
	for build, path := range testsupport.ChromiumBuilds(t) {
		for _, from := range []string{"rules", "export"} {
			t.Run(build+"/"+from, func(t *testing.T) {
				sites := newPrivateSites(t, certs)
				docsHost := strings.TrimPrefix(sites.docs.URL, "https://")
				cookies := []spec.Cookie{{Name: "session", Value: "abc123"}, {Name: "api", Value: "only-api", Path: "/api"}}
				cfg := Config{ChromiumPath: path, AllowedHosts: sites.allowlist(), Timeout: 30 * time.Second}
				src := Source{URL: sites.docs.URL + "/manual"}
				if from == "rules" {
					rules, err := sourceauth.Parse([]byte(fmt.Sprintf(`{"rules": [
						{"hosts": %q, "headers": {"Authorization": "env:TEST_DOCS_TOKEN"}, "cookies": [{"name": "session", "value": "abc123"}, {"name": "api", "value": "only-api", "path": "/api"}]}
					]}`, docsHost)), func(n string) (string, bool) { return testToken, n == "TEST_DOCS_TOKEN" }, nil)
					if err != nil {
						t.Fatal(err)
					}
					cfg.SourceAuth = rules
				} else {
					src.Auth = spec.Credentials{Headers: map[string]string{"authorization": testToken}, Cookies: cookies}
				}
				r := newRenderer(t, cfg, func(r *Renderer) { r.hooks.proxy.UpstreamRoots, r.hooks.trustSPKI = certs.roots, []string{certs.spki} })
				s := spec.Options{WaitFor: "document.getElementById('done')"}.Settings()
				out := mustRender(t, r, src, s)
				text := pdfText(t, out.pdf)
				for _, want := range []string{"PRIVATE-PAGE", "DATA-OK", "WORKER-OK", "FRAME-OK", "ALL-DONE"} {
					if !strings.Contains(text, want) {
						t.Errorf("PDF lacks %q:\n%s", want, text)
					}
				}
				if len(out.stats.Warnings) != 0 {
					t.Errorf("warnings: %+v", out.stats.Warnings)
				}
				seen := map[string]bool{}
				for _, h := range sites.docsLog.all() {
					seen[h.path] = true
					if h.auth != testToken || !strings.Contains(h.cookie, testSession) {
						t.Errorf("private host: %s came without the credentials (auth %q, cookie %q)", h.path, h.auth, h.cookie)
					}
					if strings.HasPrefix(h.path, "/api/") != strings.Contains(h.cookie, "api=only-api") {
						t.Errorf("private host: %s cookie %q: the /api cookie belongs to /api paths only", h.path, h.cookie)
					}
				}
				for _, p := range []string{"/manual", "/img/diagram.svg", "/api/data", "/worker.js", "/api/from-worker", "/img/from-frame.svg"} {
					if !seen[p] {
						t.Errorf("private host never got %s (got %v)", p, sites.docsLog.all())
					}
				}
				other := sites.otherLog.all()
				if len(other) < 2 {
					t.Errorf("second host got %d requests, want the frame and the page's fetch: %v", len(other), other)
				}
				for _, h := range other {
					if h.auth != "" || strings.Contains(h.cookie, "abc123") || strings.Contains(h.cookie, "only-api") {
						t.Errorf("second host: %s got credentials (auth %q, cookie %q)", h.path, h.auth, h.cookie)
					}
				}
			})
		}
	}
}

// TestRender_ExportCredentialsStayWithTheirRender: two renders of the same
// private page run at once in one browser, one with the right token and one
// with a wrong one; each request carries its own render's token only, so
// the first prints and the second fails on the page's 401.
func TestRender_ExportCredentialsStayWithTheirRender(t *testing.T) {
	t.Parallel()
	certs := newTestTLS(t)
	sites := newPrivateSites(t, certs)
	r := newRenderer(t, Config{AllowedHosts: sites.allowlist(), Timeout: 30 * time.Second},
		func(r *Renderer) { r.hooks.proxy.UpstreamRoots, r.hooks.trustSPKI = certs.roots, []string{certs.spki} })
	session := []spec.Cookie{{Name: "session", Value: "abc123"}}
	tokens := []string{testToken, "Bearer someone-else"}
	results := make([]rendered, len(tokens))
	var wg sync.WaitGroup
	for i, token := range tokens {
		wg.Go(func() {
			src := Source{URL: sites.docs.URL + "/manual", Auth: spec.Credentials{Headers: map[string]string{"Authorization": token}, Cookies: session}}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			results[i] = render(t, r, ctx, src, spec.Options{WaitFor: "document.getElementById('done')"}.Settings())
		})
	}
	wg.Wait()
	if results[0].err != nil {
		t.Errorf("render with the right token: %v", results[0].err)
	}
	if results[1].err == nil || !strings.Contains(results[1].err.Error(), "401") {
		t.Errorf("render with a wrong token: err %v, want the page's 401", results[1].err)
	}
	var wrong int
	for _, h := range sites.docsLog.all() {
		if h.auth == tokens[1] {
			wrong++
		}
		if h.auth != tokens[0] && h.auth != tokens[1] {
			t.Errorf("%s came with auth %q", h.path, h.auth)
		}
	}
	if wrong != 1 {
		t.Errorf("%d requests with the wrong token, want 1 (its page; the right token's requests never carry it)", wrong)
	}
}
