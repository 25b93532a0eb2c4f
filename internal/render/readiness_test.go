package render

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// inspectCase is a document and what an inspection of it must say.
type inspectCase struct {
	name, html string
	want       bool
}

// checkInspection sets each case's document in a blank tab of the shared
// Renderer's browser and checks what inspect (isStatic, isFrameless) says.
func checkInspection(t *testing.T, what string, inspect func(context.Context, *chromedp.Target) (bool, error), cases []inspectCase) {
	t.Helper()
	r := sharedRenderer(t)
	tabCtx, cancel := chromedp.NewContext(r.current().ctx, chromedp.WithNewWindow(false))
	defer cancel()
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatal(err)
	}
	tab := chromedp.FromContext(tabCtx).Target
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := cdp.Call(ctx, tab, page.SetDocumentContent, page.SetDocumentContentParams{FrameID: cdp.FrameID(tab.TargetID), HTML: tc.html}); err != nil {
				t.Fatal(err)
			}
			got, err := inspect(ctx, tab)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s = %v, want %v", what, got, tc.want)
			}
		})
	}
}

// TestIsStatic: only a document that can run no script and has no frame or
// plugin skips the network quiet period.
func TestIsStatic(t *testing.T) {
	t.Parallel()
	checkInspection(t, "isStatic", isStatic, []inspectCase{
		{"text and style", `<style>h1{color:red}</style><h1>title</h1><p>text`, true},
		{"data image and inline svg", `<img src="data:image/png;base64,iVBORw0KGgo="><svg><rect width="5" height="5"/></svg>`, true},
		{"an attribute that only starts like a handler", `<p data-onload="x" title="onclick">x</p>`, true},
		{"script", `<p>x</p><script>1</script>`, false},
		{"svg script", `<svg><script>1</script></svg>`, false},
		{"body onload", `<body onload="fetch('/x')">x</body>`, false},
		{"img onerror", `<img src="data:," onerror="fetch('/x')">`, false},
		{"svg onload", `<svg onload="fetch('/x')"></svg>`, false},
		{"iframe", `<iframe srcdoc="<script>fetch('/x')</script>"></iframe>`, false},
		{"object", `<object data="data:text/html,x"></object>`, false},
		{"embed", `<embed src="data:text/html,x">`, false},
	})
}

// TestIsFrameless: a static document gets no frame unless a frame could
// change it: a lazy image (its load starts in a frame) or an animation or
// transition (a frame advances it).
func TestIsFrameless(t *testing.T) {
	t.Parallel()
	checkInspection(t, "isFrameless", isFrameless, []inspectCase{
		{"text, style and an eager image", `<style>h1{color:red}</style><h1>title</h1><img src="data:,">`, true},
		{"a lazy image", `<p>x</p><img loading="lazy" src="data:,">`, false},
		{"a lazy image, attribute in capitals", `<img LOADING="LAZY" src="data:,">`, false},
		{"a CSS animation", `<style>@keyframes f{from{opacity:0}to{opacity:1}} p{animation:f 2s}</style><p>x</p>`, false},
		{"an animation that ended", `<style>@keyframes f{to{opacity:1}} p{animation:f 0s}</style><p>x</p>`, true},
	})
}

// TestRender_WaitsForRequestsAfterLoad: a page whose scripts fetch content
// after its load event, from timers, is printed with that content, without
// wait_for (the network quiet period covers it): one fetch 100 ms after
// load, a chain of a fetch and a timer that starts another, a timer just
// inside the quiet period, and a fetch a web font's arrival starts.
func TestRender_WaitsForRequestsAfterLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script string
		want         []string
	}{
		{"a fetch 100 ms after load", `addEventListener("load", () => setTimeout(() => get("/late"), 100));`, []string{"LATE-CONTENT"}},
		{"a fetch, then a timer that fetches again", `addEventListener("load", () => setTimeout(() => get("/late").then(() => setTimeout(() => get("/later"), 250)), 50));`, []string{"LATE-CONTENT", "LATER-CONTENT"}},
		{"a timer just inside the quiet period", `addEventListener("load", () => setTimeout(() => get("/late"), 280));`, []string{"LATE-CONTENT"}},
		{"timers that start nothing, then one that fetches", `let n = 0; const tick = setInterval(() => { if (++n === 10) { clearInterval(tick); get("/late"); } }, 20);`, []string{"LATE-CONTENT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
				switch req.URL.Path {
				case "/late", "/later":
					time.Sleep(200 * time.Millisecond)
					w.Write([]byte(strings.ToUpper(strings.TrimPrefix(req.URL.Path, "/")) + "-CONTENT "))
				default:
					w.Header().Set("Content-Type", "text/html")
					w.Write([]byte(`<!doctype html><p>EARLY</p><script>
						const get = u => fetch(u).then(r => r.text()).then(t => document.body.append(t));
						` + tc.script + `
						</script>`))
				}
			})
			r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())})
			out := mustRender(t, r, Source{URL: s.URL + "/"}, settings(spec.Options{}))
			text := pdfText(t, out.pdf)
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the content fetched after load (%s) is missing:\n%s", w, text)
				}
			}
		})
	}
}

// TestRender_QuietPageSkipsTheQuietPeriod: a page that runs script but
// starts no request after its load event (a theme switch, a highlighter:
// Node.js's API pages) does not wait the network quiet period in real
// time; its timers run on the page's virtual clock.
func TestRender_QuietPageSkipsTheQuietPeriod(t *testing.T) {
	// Serial (no t.Parallel): its bound on the idle wait is real time.
	s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><p>SCRIPTED</p><script>
			setTimeout(() => document.body.append("TIMER-RAN"), 200);
			</script>`))
	})
	var mu sync.Mutex
	marks := map[string]time.Time{}
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())}, func(r *Renderer) {
		r.hooks.mark = func(step string) {
			mu.Lock()
			marks[step] = time.Now()
			mu.Unlock()
		}
	})
	out := mustRender(t, r, Source{URL: s.URL + "/"}, settings(spec.Options{}))
	if text := pdfText(t, out.pdf); !strings.Contains(text, "TIMER-RAN") {
		t.Errorf("the timer's content is missing:\n%s", text)
	}
	mu.Lock()
	waited := marks["network idle"].Sub(marks["static check"])
	mu.Unlock()
	if waited <= 0 || waited >= networkQuiet*3/4 {
		t.Errorf("the network idle wait took %v; want well under the quiet period (%v) for a page that requests nothing after load", waited, networkQuiet)
	}
}
