package render

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestRender_QuietEndsWhenThePageIsIdle: the quiet period of a page under
// BeginFrame control ends early only once the page has nothing scheduled
// (idle.go), and what the page did until then is printed: timers, fetches,
// a script and an image loaded after the load event, animation frames. A
// page that keeps something scheduled, or uses what the probe cannot
// follow, waits the whole period and still gets its work done in it.
func TestRender_QuietEndsWhenThePageIsIdle(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/late", "/later":
			time.Sleep(150 * time.Millisecond)
			w.Write([]byte(strings.ToUpper(strings.TrimPrefix(req.URL.Path, "/")) + "-CONTENT "))
		case "/late.js":
			time.Sleep(150 * time.Millisecond)
			w.Header().Set("Content-Type", "text/javascript")
			w.Write([]byte(`document.body.append("SCRIPT-RAN");`))
		case "/worker.js":
			w.Header().Set("Content-Type", "text/javascript")
			w.Write([]byte(`postMessage("WORKER-SAID");`))
		case "/slow.png":
			time.Sleep(150 * time.Millisecond)
			w.Header().Set("Content-Type", "image/png")
			w.Write(testPNG(t, true))
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<!doctype html><style>@keyframes spin { to { background-color: rgb(0, 0, 200) } } .spin { animation: spin 1s infinite }</style>
				<p>EARLY</p><script>
				const add = t => document.body.append(" " + t);
				const get = u => fetch(u).then(r => r.text()).then(add);
				` + req.URL.Query().Get("script") + `
				</script>`))
		}
	})
	var endedIdle atomic.Bool
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())}, func(r *Renderer) {
		r.hooks.mark = func(step string) {
			if step == "quiet ended idle" {
				endedIdle.Store(true)
			}
		}
	})
	if !r.current().frameControl.Load() {
		t.Fatalf("the test's Chromium has no BeginFrame control (%s); the probe serves only such tabs", r.cfg.ChromiumPath)
	}
	for _, tc := range []struct {
		name, script string
		idle         bool
		want         []string
	}{
		{"a theme switch", `document.documentElement.className = "dark"; add("THEMED");`, true, []string{"THEMED"}},
		{"an observer that changes nothing", `new IntersectionObserver(() => {}).observe(document.body); new ResizeObserver(() => {}).observe(document.body);`, true, []string{"EARLY"}},
		{"a timer that adds text", `setTimeout(() => add("TIMER-RAN"), 120);`, true, []string{"TIMER-RAN"}},
		{"fetches in a chain", `addEventListener("load", () => get("/late").then(() => get("/later")));`, true, []string{"LATE-CONTENT", "LATER-CONTENT"}},
		{"a script added after load", `addEventListener("load", () => { const s = document.createElement("script"); s.src = "/late.js"; document.head.append(s); });`, true, []string{"SCRIPT-RAN"}},
		{"an image's load handler", `addEventListener("load", () => { const i = new Image(); i.onload = () => add("IMAGE-LOADED"); i.src = "/slow.png"; document.body.append(i); });`, true, []string{"IMAGE-LOADED"}},
		{"an XMLHttpRequest", `const x = new XMLHttpRequest(); x.open("GET", "/late"); x.onload = () => add("XHR:" + x.responseText); x.send();`, true, []string{"XHR:LATE-CONTENT"}},
		{"animation frames", `let n = 0; const f = () => { if (++n < 5) requestAnimationFrame(f); else add("FRAMES-DONE"); }; requestAnimationFrame(f);`, true, []string{"FRAMES-DONE"}},
		{"an interval never cleared", `setInterval(() => {}, 1000); add("POLLING");`, false, []string{"POLLING"}},
		{"a running animation", `const d = document.createElement("div"); d.className = "spin"; d.textContent = "SPINNING"; document.body.append(d);`, false, []string{"SPINNING"}},
		{"a worker", `new Worker("/worker.js").onmessage = e => add(e.data);`, false, []string{"WORKER-SAID"}},
		{"a message to itself", `addEventListener("message", e => add(e.data)); postMessage("MESSAGE-CAME", "*");`, false, []string{"MESSAGE-CAME"}},
		{"a timer of source text", `setTimeout("add('TEXT-TIMER')", 50);`, false, []string{"TEXT-TIMER"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endedIdle.Store(false)
			out := mustRender(t, r, Source{URL: s.URL + "/?script=" + url.QueryEscape(tc.script)}, settings(spec.Options{}))
			text := pdfText(t, out.pdf)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%s is missing from the print:\n%s", w, text)
				}
			}
			if got := endedIdle.Load(); got != tc.idle {
				t.Errorf("the quiet period ended early: %v, want %v", got, tc.idle)
			}
		})
	}
}

// TestRender_NodeDocsPageEndsIdle: a page of Debian's Node.js API docs
// (their script sets the theme and observes the sticky header) ends its
// quiet period early, and prints the same pages as the peer's bare tab
// (pixels compared), which waits for nothing but the load.
func TestRender_NodeDocsPageEndsIdle(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(nodeDocs, "dns.html")); err != nil {
		t.Fatalf("%v (make setup installs nodejs-doc)", err)
	}
	s := newSite(t, http.FileServer(http.Dir(nodeDocs)).ServeHTTP)
	var endedIdle atomic.Int32
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())}, func(r *Renderer) {
		r.hooks.mark = func(step string) {
			if step == "quiet ended idle" {
				endedIdle.Add(1)
			}
		}
	})
	p := newPeer(t, r.cfg.ChromiumPath)
	src := Source{URL: s.URL + "/dns.html"}
	bare := rasterize(t, peerPDF(t, p, src, settings(spec.Options{}), ""))
	early := rasterize(t, mustRender(t, r, src, settings(spec.Options{})).pdf)
	if n := endedIdle.Load(); n != 1 {
		t.Errorf("the quiet period ended early in %d renders, want 1", n)
	}
	if len(early) != len(bare) {
		t.Fatalf("%d pages ending idle, the peer's %d", len(early), len(bare))
	}
	for i := range bare {
		if n, total := pixelDiff(t, bare[i], early[i]); float64(n) > pageDiffFraction*float64(total) {
			t.Errorf("page %d: %d of %d pixels differ from the peer's", i+1, n, total)
		}
	}
}

// TestIdleProbe_States: what the probe says of a page with one thing
// unfinished (a request the server holds, a long timer) or one thing it
// cannot follow, read in a tab that runs it.
func TestIdleProbe_States(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hold := func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	}
	s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/hold":
			hold(w, req)
		case "/headers-then-hold":
			w.Write([]byte("begun "))
			w.(http.Flusher).Flush()
			hold(w, req)
		case "/worker.js":
			w.Header().Set("Content-Type", "text/javascript")
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<!doctype html><p>page</p><script>
				addEventListener("load", () => { ` + req.URL.Query().Get("script") + ` });
				</script>`))
		}
	})
	// A browser of its own: the shared one's egress proxy refuses the site.
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())})
	tabCtx, cancel := chromedp.NewContext(r.current().ctx, chromedp.WithNewWindow(false))
	defer cancel()
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatal(err)
	}
	tab := chromedp.FromContext(tabCtx).Target
	ctx, cancelCtx := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelCtx()
	if err := installIdleProbe(ctx, tab); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, script, want string }{
		{"nothing left", `document.body.className = "x";`, "idle"},
		{"a timer", `setTimeout(() => {}, 60000);`, "pending"},
		{"a cleared timer", `clearTimeout(setTimeout(() => {}, 60000));`, "idle"},
		{"an interval", `setInterval(() => {}, 60000);`, "pending"},
		{"a cleared interval", `clearInterval(setInterval(() => {}, 60000));`, "idle"},
		{"a fetch", `fetch("/hold");`, "pending"},
		{"a body read", `fetch("/headers-then-hold").then(r => r.text());`, "pending"},
		{"an XMLHttpRequest", `const x = new XMLHttpRequest(); x.open("GET", "/hold"); x.send();`, "pending"},
		{"an image", `const i = new Image(); i.src = "/hold"; document.body.append(i);`, "an image loading"},
		{"a script", `const s = document.createElement("script"); s.src = "/hold"; document.head.append(s);`, "a script loading"},
		{"a style sheet", `const l = document.createElement("link"); l.rel = "stylesheet"; l.href = "/hold"; document.head.append(l);`, "a link loading"},
		{"a web font", `const f = new FontFace("Held", "url(/hold)"); document.fonts.add(f); f.load();`, "fonts loading"},
		{"an animation", `document.body.animate([{opacity: 0}, {opacity: 1}], 60000);`, "animations"},
		{"a frame", `document.body.append(document.createElement("iframe"));`, "busy: an element"},
		{"a worker", `new Worker("/worker.js");`, "busy: Worker"},
		{"IndexedDB", `indexedDB.open("x");`, "busy: IndexedDB"},
		{"crypto.subtle", `crypto.subtle.digest("SHA-256", new Uint8Array(1));`, "busy: crypto.subtle"},
		{"a message to itself", `postMessage("x", "*");`, "busy: postMessage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cdp.Call(ctx, tab, page.Navigate, page.NavigateParams{URL: s.URL + "/?script=" + url.QueryEscape(tc.script)}); err != nil {
				t.Fatal(err)
			}
			var state string
			testsupport.Eventually(t, 10*time.Second, func() error {
				res, err := cdp.Call(ctx, tab, runtime.Evaluate, runtime.EvaluateParams{
					Expression: `document.readyState === "complete" && !location.href.startsWith("about:") ? ` + idleStateExpr + ` : "not loaded"`, ReturnByValue: new(true)})
				if err != nil {
					return err
				}
				if res.Result == nil || res.ExceptionDetails != nil {
					return fmt.Errorf("no answer: %v", res.ExceptionDetails)
				}
				if err := json.Unmarshal(res.Result.Value, &state); err != nil {
					return err
				}
				return testsupport.Unless(strings.HasPrefix(state, tc.want), "the probe says %q, want %q", state, tc.want)
			})
		})
	}
}
