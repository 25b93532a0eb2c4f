package render

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

const forbiddenMarker = "FORBIDDEN-MARKER"

// attemptsJS defines F (the forbidden origin), note, done and try* helpers
// that try to reach F in many ways and record the outcome. Anything read
// from F carries forbiddenMarker into the notes. It works in windows and
// workers.
func attemptsJS(forbidden string) string {
	ws := "ws" + strings.TrimPrefix(forbidden, "http")
	return fmt.Sprintf(`
const F = %q, FWS = %q;
const notes = [];
function note(s) { notes.push(String(s)); }
function tryFetch(path) {
  return fetch(F + path).then(r => r.text()).then(t => note("fetch got " + t), () => note("fetch blocked"));
}
function tryXHR(path) {
  return new Promise(res => {
    const x = new XMLHttpRequest();
    x.open("GET", F + path);
    x.onload = () => { note("xhr got " + x.responseText); res(); };
    x.onerror = () => { note("xhr blocked"); res(); };
    x.send();
  });
}
function tryWS(path) {
  return new Promise(res => {
    let ws;
    try { ws = new WebSocket(FWS + path); } catch (e) { note("ws threw"); return res(); }
    const t = setTimeout(() => { note("ws timed out"); res(); }, 5000);
    ws.onopen = () => { clearTimeout(t); note("ws open %s"); res(); };
    ws.onerror = () => { clearTimeout(t); note("ws blocked"); res(); };
  });
}
function tryBeacon(path) { try { navigator.sendBeacon(F + path, "x"); } catch (e) {} }
`, forbidden, ws, forbiddenMarker)
}

// domJS adds window helpers: tryImg, tryFrame and finish (prints the notes and
// sets window.__done).
const domJS = `
function tryImg(src) {
  return new Promise(res => {
    const i = new Image();
    i.onload = () => { note("img loaded " + src + " FORBIDDEN-MARKER"); res(); };
    i.onerror = () => { note("img blocked"); res(); };
    i.src = src;
    document.body.appendChild(i);
  });
}
function tryFrame(src) {
  const f = document.createElement("iframe");
  f.src = src;
  document.body.appendChild(f);
}
function finish(label) {
  const pre = document.createElement("pre");
  pre.textContent = notes.join("\n");
  document.body.appendChild(pre);
  const p = document.createElement("p");
  p.textContent = label;
  document.body.appendChild(p);
  window.__done = true;
}
`

// egressSites are the servers of the egress tests: forbidden counts every
// request it gets and answers with forbiddenMarker in every format; a is the
// allowed 127.0.0.1 origin with the pages; b is a second allowed origin on
// "localhost", a different site, so its frames run out of process.
type egressSites struct {
	forbidden, a, b *site
	bURL            string // http://localhost:PORT
}

func newEgressSites(t *testing.T) *egressSites {
	t.Helper()
	s := &egressSites{}
	s.forbidden = newSite(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch {
		case strings.HasSuffix(req.URL.Path, ".js"):
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, `try { document.body.append(%q) } catch (e) {} try { postMessage(["%[1]s"]) } catch (e) {}`, forbiddenMarker)
		case strings.HasSuffix(req.URL.Path, ".css"):
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprintf(w, `body::after { content: %q }`, forbiddenMarker)
		default:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<p>%s %s</p>", forbiddenMarker, req.URL.Path)
		}
	})
	F := s.forbidden.URL
	js := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, body)
	}
	html := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><meta charset=utf-8><body><script>"+attemptsJS(F)+domJS+"</script>"+body)
	}
	var bURL string
	common := func(w http.ResponseWriter, req *http.Request) bool {
		if req.URL.Path == "/to-forbidden" {
			http.Redirect(w, req, F+"/redirected", http.StatusFound)
			return true
		}
		return false
	}
	s.a = newSite(t, func(w http.ResponseWriter, req *http.Request) {
		if common(w, req) {
			return
		}
		switch req.URL.Path {
		case "/embeds":
			html(w, fmt.Sprintf(`<h1>EMBEDS-PAGE</h1>
				<img src="%[1]s/embedded.png"><link rel="stylesheet" href="%[1]s/style.css">
				<script src="%[1]s/script.js"></script><iframe src="%[1]s/frame"></iframe>
				<object data="%[1]s/object"></object><link rel="prefetch" href="%[1]s/prefetch">
				<link rel="preload" as="image" href="%[1]s/preload.png"><video poster="%[1]s/poster.png"></video>
				<img src="/to-forbidden"><iframe src="/to-forbidden"></iframe>
				<script>
				tryBeacon("/beacon");
				try { new EventSource(F + "/events").onerror = function () { this.close(); }; } catch (e) {}
				Promise.all([tryFetch("/fetch"), tryXHR("/xhr"), tryWS("/ws"), tryImg(F + "/img.png"),
				  fetch("/to-forbidden").then(r => r.text()).then(t => note("redirected fetch got " + t), () => note("redirected fetch blocked"))])
				  .then(() => finish("EMBEDS-DONE"));
				</script>`, F))
		case "/xsite":
			html(w, fmt.Sprintf(`<h1>XSITE-PAGE</h1>
				<iframe src="%s/frame" style="width:600px;height:400px"></iframe>
				<script>
				window.addEventListener("message", e => {
				  if (e.data && e.data.frameNotes) { e.data.frameNotes.forEach(n => note("frame: " + n)); finish("XSITE-DONE FRAME-DONE"); }
				});
				</script>`, bURL))
		case "/worker-page":
			html(w, `<h1>WORKER-PAGE</h1><script>
				function run(w) {
				  return new Promise(res => {
				    w.onmessage = e => { (Array.isArray(e.data) ? e.data : [e.data]).forEach(note); res(); };
				    w.onerror = e => { note("worker error " + e.message); res(); };
				  });
				}
				const code = `+"`"+attemptsJS(F)+`
				  Promise.all([tryFetch("/blob-worker-fetch"), tryXHR("/blob-worker-xhr"), tryWS("/blob-worker-ws")]).then(() => postMessage(notes));`+"`"+`;
				Promise.all([run(new Worker("/worker.js")), run(new Worker(URL.createObjectURL(new Blob([code], {type: "text/javascript"}))))])
				  .then(() => finish("WORKER-DONE"));
				</script>`)
		case "/worker.js":
			js(w, attemptsJS(F)+`
				try { importScripts(F + "/imported.js"); } catch (e) { note("importScripts blocked"); }
				Promise.all([tryFetch("/worker-fetch"), tryXHR("/worker-xhr"), tryWS("/worker-ws")]).then(() => postMessage(notes));`)
		case "/sw-page":
			html(w, `<h1>SW-PAGE</h1><script>
				(async () => {
				  await navigator.serviceWorker.register("/sw.js");
				  await navigator.serviceWorker.ready;
				  if (!navigator.serviceWorker.controller) {
				    await new Promise(r => navigator.serviceWorker.addEventListener("controllerchange", r));
				  }
				  note("via-sw: " + await fetch("/via-sw").then(r => r.text()));
				  note("sw-self: " + await fetch("/sw-self").then(r => r.text()));
				})().catch(e => note("sw error " + e)).then(() => finish("SW-DONE"));
				</script>`)
		case "/sw.js":
			js(w, attemptsJS(F)+`
				self.addEventListener("install", e => e.waitUntil(tryFetch("/sw-install").then(() => self.skipWaiting())));
				self.addEventListener("activate", e => e.waitUntil(self.clients.claim()));
				self.addEventListener("fetch", e => {
				  const path = new URL(e.request.url).pathname;
				  if (path === "/via-sw") {
				    e.respondWith(fetch(F + "/via-sw").then(r => r.text()).then(t => new Response("sw got " + t), () => new Response("SW-FETCH-BLOCKED")));
				  } else if (path === "/sw-self") {
				    e.respondWith(Promise.all([tryWS("/sw-ws"), tryFetch("/sw-fetch")]).then(() => new Response(notes.join("; "))));
				  }
				});`)
		default:
			http.NotFound(w, req)
		}
	})
	s.b = newSite(t, func(w http.ResponseWriter, req *http.Request) {
		if common(w, req) {
			return
		}
		switch req.URL.Path {
		case "/frame":
			html(w, fmt.Sprintf(`<h2>FRAME-OK</h2>
				<iframe src="%[1]s/nested-forbidden"></iframe><iframe src="/nested"></iframe>
				<img src="/to-forbidden"><link rel="stylesheet" href="%[1]s/frame.css"><script src="%[1]s/frame.js"></script>
				<script>
				tryBeacon("/frame-beacon");
				const t0 = Date.now();
				Promise.all([tryFetch("/frame-fetch"), tryXHR("/frame-xhr"), tryWS("/frame-ws"), tryImg(F + "/frame-img.png"),
				  fetch("/to-forbidden").then(r => r.text()).then(t => note("frame redirected fetch got " + t), () => note("frame redirected fetch blocked"))])
				  .then(() => new Promise(r => setTimeout(r, Math.max(0, 1500 - (Date.now() - t0)))))
				  .then(() => parent.postMessage({frameNotes: notes}, "*"));
				</script>`, F))
		case "/nested":
			html(w, `<p>NESTED-OK</p><script>Promise.all([tryFetch("/nested-fetch"), tryImg(F + "/nested-img.png")]).then(() => finish("NESTED-DONE"));</script>`)
		default:
			http.NotFound(w, req)
		}
	})
	bURL = "http://localhost:" + strconv.Itoa(s.b.Listener.Addr().(*net.TCPAddr).Port)
	s.bURL = bURL
	return s
}

func (s *egressSites) allowlist() allowlist.List {
	bPort := strconv.Itoa(s.b.Listener.Addr().(*net.TCPAddr).Port)
	// localhost:PORT lets the name through; the proxy dials 127.0.0.1:PORT
	// only because that exact address is listed too.
	return allowlist.MustParse(s.a.hostPort() + ",localhost:" + bPort + ",127.0.0.1:" + bPort)
}

// TestRender_EgressGuardedInEveryContext loads pages that try to reach a
// forbidden server from the page, a cross-site (out-of-process) iframe and
// its nested frames, dedicated and blob workers and a service worker, by
// embedding, redirecting, fetch, XHR, WebSocket, EventSource and beacons.
// It runs with both guard layers and with the proxy alone, on both Chromium
// builds: the forbidden server must get no request and its text must not
// reach the PDF. The full browser runs the cross-site frame in another
// process (site isolation); the headless shell runs it in the page's process,
// where the tab guard sees its requests too.
func TestRender_EgressGuardedInEveryContext(t *testing.T) {
	t.Parallel()
	for build, path := range testsupport.ChromiumBuilds(t) {
		t.Run(build, func(t *testing.T) { testEgressGuarded(t, path, !chromium.IsHeadlessShell(path)) })
	}
}

func testEgressGuarded(t *testing.T, chromiumPath string, siteIsolation bool) {
	sites := newEgressSites(t)
	fport := strconv.Itoa(sites.forbidden.Listener.Addr().(*net.TCPAddr).Port)
	cases := []struct {
		path, want string
		alsoWant   []string
	}{
		{"/embeds", "EMBEDS-DONE", []string{"EMBEDS-PAGE", "fetch blocked", "xhr blocked", "ws blocked"}},
		{"/xsite", "XSITE-DONE", []string{"FRAME-OK", "FRAME-DONE", "NESTED-OK", "NESTED-DONE", "fetch blocked", "xhr blocked", "ws blocked"}},
		{"/worker-page", "WORKER-DONE", []string{"fetch blocked", "xhr blocked", "ws blocked", "importScripts blocked"}},
		{"/sw-page", "SW-DONE", []string{"SW-FETCH-BLOCKED", "sw-self: ", "ws blocked"}},
	}
	for _, layers := range []string{"both layers", "proxy only"} {
		t.Run(layers, func(t *testing.T) {
			var mu sync.Mutex
			var refusedTargets []string
			r := newRenderer(t, Config{ChromiumPath: chromiumPath, AllowedHosts: sites.allowlist(), Timeout: 30 * time.Second}, func(r *Renderer) {
				r.hooks.skipTabGuard = layers == "proxy only"
				r.hooks.proxy.OnRefuse = func(hostPort, reason string) {
					mu.Lock()
					refusedTargets = append(refusedTargets, hostPort)
					mu.Unlock()
				}
			})
			// refusedF returns (and forgets) the proxy's refusals of the
			// forbidden server since the last call.
			refusedF := func() []string {
				mu.Lock()
				defer mu.Unlock()
				var got []string
				for _, hp := range refusedTargets {
					if strings.Contains(hp, "127.0.0.1:"+fport) {
						got = append(got, hp)
					}
				}
				refusedTargets = nil
				return got
			}
			for _, tc := range cases {
				t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
					refusedF()
					var oopif oopifWatch
					if tc.path == "/xsite" {
						stop := oopif.start(r, sites.bURL)
						defer stop()
					}
					ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
					defer cancel()
					out := render(t, r, ctx, Source{URL: sites.a.URL + tc.path}, settings(spec.Options{WaitFor: "window.__done === true"}))
					if out.err != nil {
						t.Fatalf("Render: %v", out.err)
					}
					text := pdfText(t, out.pdf)
					for _, w := range append([]string{tc.want}, tc.alsoWant...) {
						if !strings.Contains(text, w) {
							t.Errorf("PDF text lacks %q", w)
						}
					}
					if strings.Contains(text, forbiddenMarker) {
						t.Errorf("forbidden content reached the PDF")
					}
					if t.Failed() {
						t.Logf("PDF text:\n%s", text)
					}
					if n := sites.forbidden.total(); n != 0 {
						t.Fatalf("the forbidden server got %d requests: %v", n, sites.forbidden.hits)
					}
					refused := refusedF()
					t.Logf("the proxy refused %d requests to the forbidden server: %v", len(refused), refused)
					if tc.path == "/xsite" {
						switch {
						case siteIsolation && !oopif.seen():
							t.Errorf("the cross-site frame never showed as an iframe target: it is not out of process, the test proves less")
						case !siteIsolation && oopif.seen():
							t.Errorf("the cross-site frame ran out of process in the headless shell: it prints blank there")
						}
						if sites.b.count("/frame") == 0 || sites.b.count("/nested") == 0 {
							t.Errorf("the allowed cross-site frames were not loaded: %v", sites.b.hits)
						}
						// The frame's own requests escape the tab-level guard
						// (other process); the proxy must be the one refusing.
						if siteIsolation && len(refused) == 0 {
							t.Errorf("the proxy refused nothing for the cross-site frame")
						}
					}
					if layers == "proxy only" && len(refused) == 0 {
						t.Errorf("with the tab guard off the proxy refused nothing")
					}
				})
			}
			t.Logf("proxy refusals in total (including Chromium's own traffic): %d", r.EgressRefused())
		})
	}
}

// TestRender_EgressProxyRefusedSourceIsBlocked: a listed name whose address is
// not listed fails as ErrBlocked, and a redirect of the main document to the
// forbidden server with the tab guard off is refused by the proxy as
// ErrBlocked too.
func TestRender_EgressProxyRefusedSourceIsBlocked(t *testing.T) {
	t.Parallel()
	testsupport.SkipShort(t, "Chromium") // its counts after the subtests need them run
	sites := newEgressSites(t)
	aPort := strconv.Itoa(sites.a.Listener.Addr().(*net.TCPAddr).Port)
	allow := allowlist.MustParse(sites.a.hostPort() + ",localhost:" + aPort + ",127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t)))
	t.Run("tab guard off", func(t *testing.T) {
		r := newRenderer(t, Config{AllowedHosts: allow}, func(r *Renderer) { r.hooks.skipTabGuard = true })
		out := render(t, r, context.Background(), Source{URL: "http://localhost:" + aPort + "/embeds"}, settings(spec.Options{WaitFor: "window.__done === true"}))
		if out.err != nil {
			t.Errorf("name and address both listed: %v", out.err)
		}
		out = render(t, r, context.Background(), Source{URL: sites.a.URL + "/to-forbidden"}, settings(spec.Options{}))
		if !errors.Is(out.err, ErrBlocked) || Retryable(out.err) {
			t.Errorf("redirect refused by the proxy: err = %v, want non-retryable ErrBlocked", out.err)
		}
		t.Logf("redirect: %v", out.err)
	})
	t.Run("name listed without its address", func(t *testing.T) {
		r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse("localhost:" + aPort)})
		out := render(t, r, context.Background(), Source{URL: "http://localhost:" + aPort + "/embeds"}, settings(spec.Options{}))
		if !errors.Is(out.err, ErrBlocked) || Retryable(out.err) {
			t.Errorf("err = %v, want non-retryable ErrBlocked", out.err)
		}
		t.Logf("name without its address: %v", out.err)
	})
	if n := sites.a.count("/embeds"); n != 1 {
		t.Errorf("the page was requested %d times, want 1 (the allowed render)", n)
	}
	if n := sites.forbidden.total(); n != 0 {
		t.Errorf("the forbidden server got %d requests", n)
	}
}

// oopifWatch polls Chromium's target list for an out-of-process iframe.
type oopifWatch struct {
	mu  sync.Mutex
	hit bool
}

func (o *oopifWatch) start(r *Renderer, urlPrefix string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if b := r.current(); b != nil {
				res, err := cdp.Call(ctx, b.session(), target.GetTargets, target.GetTargetsParams{})
				if err == nil {
					for _, ti := range res.TargetInfos {
						if ti.Type == "iframe" && strings.HasPrefix(ti.URL, urlPrefix) {
							o.mu.Lock()
							o.hit = true
							o.mu.Unlock()
						}
					}
				}
			}
			sleep(ctx, 30*time.Millisecond)
		}
	})
	return func() { cancel(); wg.Wait() }
}

func (o *oopifWatch) seen() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hit
}
