package render

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// afterPrintState is what a page's tab shows once its PDF is made: the
// body's content-visibility and whether print media still applies.
type afterPrintState struct {
	ContentVisibility string `json:"cv"`
	PrintMedia        bool   `json:"print"`
}

const afterPrintStateExpr = `JSON.stringify({cv: getComputedStyle(document.body).contentVisibility, print: matchMedia('print').matches})`

// TestRender_LayoutAfterPrint pins skipLayoutAfterPrint: the body's
// contents are locked after the print only where no script of the page
// can see screen media before it, and a locked page's PDF prints the pages
// the peer's bare tab (peer_test.go), which never locks, prints of it.
func TestRender_LayoutAfterPrint(t *testing.T) {
	t.Parallel()
	const mediaProbe = `document.body.append(matchMedia('print').matches ? ' MEDIA-PRINT ' : ' MEDIA-SCREEN ')`
	pages := map[string]string{
		"/script":      `<!doctype html><body><h1>Scripted</h1><p>text</p><script>document.body.dataset.ran = '1'</script>`,
		"/beforeprint": `<!doctype html><body><h1>Before print</h1><script>addEventListener('beforeprint', () => ` + mediaProbe + `)</script>`,
		"/attribute":   `<!doctype html><body onbeforeprint="` + strings.ReplaceAll(mediaProbe, `'`, `&#39;`) + `"><h1>Attribute</h1><script>0</script>`,
		"/waitfor":     `<!doctype html><body><h1>Wait for</h1><script>window.ready = true</script>`,
		"/channel":     `<!doctype html><body><h1>Channel</h1><script>new MessageChannel().port1.onmessage = () => {}</script>`,
	}
	site := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(pages[req.URL.Path]))
	})
	hosts := []string{site.hostPort()}
	var nodeURL string
	if _, err := os.Stat(nodeDocs + "/dns.html"); err == nil {
		node := newSite(t, http.FileServer(http.Dir(nodeDocs)).ServeHTTP)
		hosts = append(hosts, node.hostPort())
		nodeURL = node.URL + "/dns.html"
	}
	cfg := Config{AllowedHosts: allowlist.MustParse(strings.Join(hosts, ","))}
	var state afterPrintState
	readState := func(ctx context.Context, tab *chromedp.Target) {
		state = afterPrintState{}
		res, err := cdp.Call(ctx, tab, runtime.Evaluate, runtime.EvaluateParams{Expression: afterPrintStateExpr, ReturnByValue: new(true)})
		if err != nil || res.ExceptionDetails != nil {
			t.Errorf("reading the page after its print: %v %v", err, res.ExceptionDetails)
			return
		}
		var s string
		err = json.Unmarshal(res.Result.Value, &s)
		if err == nil {
			err = json.Unmarshal([]byte(s), &state)
		}
		if err != nil {
			t.Errorf("reading the page after its print: %v", err)
		}
	}
	onDemand := newRenderer(t, cfg, func(r *Renderer) { r.hooks.printed = readState })
	full, err := chromium.FullBrowser()
	if err != nil {
		t.Fatal(err)
	}
	fullCfg := cfg
	fullCfg.ChromiumPath = full
	// The full browser keeps Chromium's own frames.
	ownFrames := newRenderer(t, fullCfg, func(r *Renderer) { r.hooks.printed = readState })
	bare := newPeer(t, onDemand.cfg.ChromiumPath)
	screen := settings(spec.Options{Media: "screen"})
	cases := []struct {
		name   string
		r      *Renderer
		src    Source
		s      spec.PrintSettings
		locked bool
		text   string // the PDF's text has it
	}{
		{name: "static HTML", r: onDemand, src: Source{HTML: `<h1>Static</h1><p>static text</p>`}, s: settings(spec.Options{}), locked: true, text: "static text"},
		{name: "a page that runs script", r: onDemand, src: Source{URL: site.URL + "/script"}, s: settings(spec.Options{}), locked: true, text: "Scripted"},
		{name: "in a session", r: onDemand, src: Source{URL: site.URL + "/script", Session: "s"}, s: settings(spec.Options{Outline: true}), locked: true, text: "Scripted"},
		{name: "a beforeprint listener", r: onDemand, src: Source{URL: site.URL + "/beforeprint"}, s: settings(spec.Options{}), text: "MEDIA-PRINT"},
		{name: "an onbeforeprint attribute", r: onDemand, src: Source{URL: site.URL + "/attribute"}, s: settings(spec.Options{}), text: "MEDIA-PRINT"},
		{name: "a message channel (idle probe busy)", r: onDemand, src: Source{URL: site.URL + "/channel"}, s: settings(spec.Options{}), text: "Channel"},
		{name: "scripted HTML (no idle probe)", r: onDemand, src: Source{HTML: `<h1>Content</h1><script>document.title = 'x'</script>`}, s: settings(spec.Options{}), text: "Content"},
		{name: "screen media", r: onDemand, src: Source{HTML: `<p>on screen</p>`}, s: screen, text: "on screen"},
		{name: "wait_for on the real clock", r: onDemand, src: Source{URL: site.URL + "/waitfor"}, s: settings(spec.Options{WaitFor: "window.ready"}), text: "Wait for"},
		{name: "Chromium's frames", r: ownFrames, src: Source{HTML: `<p>own frames</p>`}, s: settings(spec.Options{}), text: "own frames"},
	}
	if nodeURL != "" {
		cases = append(cases, struct {
			name   string
			r      *Renderer
			src    Source
			s      spec.PrintSettings
			locked bool
			text   string
		}{name: "Node.js dns.html", r: onDemand, src: Source{URL: nodeURL, MarkAnchors: true, MarkHeadings: true, Session: "node"}, s: settings(spec.Options{}), locked: true, text: "dns.lookup"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustRender(t, c.r, c.src, c.s).pdf
			wantCV, wantPrint := "visible", c.s.Media == "print"
			if c.locked {
				wantCV, wantPrint = "hidden", false
			}
			if state.ContentVisibility != wantCV || state.PrintMedia != wantPrint {
				t.Errorf("after the print: body content-visibility %q, print media %v; want %q, %v", state.ContentVisibility, state.PrintMedia, wantCV, wantPrint)
			}
			if text := pdfText(t, got); !strings.Contains(text, c.text) {
				t.Errorf("the PDF's text lacks %q: %q", c.text, text)
			}
			if !c.locked {
				return
			}
			want := rasterize(t, peerPDF(t, bare, c.src, c.s, ""))
			pages := rasterize(t, got)
			if len(pages) != len(want) {
				t.Fatalf("%d pages, the peer's %d", len(pages), len(want))
			}
			for i := range want {
				if n, total := pixelDiff(t, want[i], pages[i]); float64(n) > pageDiffFraction*float64(total) {
					t.Errorf("page %d: %d of %d pixels differ from the peer's", i+1, n, total)
				}
			}
		})
	}
}
