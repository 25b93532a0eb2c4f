package render

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestIsStatic: only a document that can run no script and has no frame or
// plugin skips the network quiet period.
func TestIsStatic(t *testing.T) {
	r := newRenderer(t, Config{})
	tabCtx, cancel := chromedp.NewContext(r.current().ctx, chromedp.WithNewWindow(false))
	defer cancel()
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatal(err)
	}
	tab := chromedp.FromContext(tabCtx).Target
	for _, tc := range []struct {
		name, html string
		static     bool
	}{
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := cdp.Call(ctx, tab, page.SetDocumentContent, page.SetDocumentContentParams{FrameID: cdp.FrameID(tab.TargetID), HTML: tc.html}); err != nil {
				t.Fatal(err)
			}
			got, err := isStatic(ctx, tab)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.static {
				t.Errorf("isStatic = %v, want %v", got, tc.static)
			}
		})
	}
}

// TestRender_WaitsForRequestsAfterLoad: a page whose script fetches content
// after its load event is printed with that content, without wait_for (the
// network quiet period covers it).
func TestRender_WaitsForRequestsAfterLoad(t *testing.T) {
	s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/late":
			time.Sleep(200 * time.Millisecond)
			w.Write([]byte("LATE-CONTENT"))
		default:
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<!doctype html><p>EARLY</p><script>
				addEventListener("load", () => setTimeout(() => fetch("/late").then(r => r.text()).then(t => document.body.append(t)), 100));
				</script>`))
		}
	})
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())})
	out := mustRender(t, r, Source{URL: s.URL + "/"}, settings(spec.Options{}))
	if text := pdfText(t, out.pdf); !strings.Contains(text, "LATE-CONTENT") {
		t.Fatalf("the content fetched after load is missing:\n%s", text)
	}
}
