package render

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestStage_PageOptions: each page option lands in its stage on a real
// Chromium: load sends the user agent, the cookies and only the headers
// whose scope matches, and emulates the media features; waitReady awaits
// a promise's value; measure sizes one page to the content; checkPage
// fails on what the page options name.
func TestStage_PageOptions(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := http.Header{}
	s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/page" {
			mu.Lock()
			seen = req.Header.Clone()
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><p>PAGE</p><script>setTimeout(() => { window.ready = true; }, 200)</script>`))
	})
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())})

	t.Run("load", func(t *testing.T) {
		ctx, pg := stagePage(t, r)
		o := loadOptions{url: s.URL + "/page", media: "print", userAgent: "PageOptions/1",
			cookies:       []spec.PageCookie{{Name: "c1", Value: "v1", Domain: s.hostPort()}, {Name: "c2", Value: "v2", Domain: "other.example"}},
			mediaFeatures: []spec.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}},
			headers: compileHeaders([]spec.ScopedHeader{{Name: "X-All", Value: "a"}, {Name: "X-Scoped", Value: "s", Scope: `/page$`},
				{Name: "X-Other", Value: "o", Scope: `other\.example`}})}
		pg.w.guard.headers = o.headers // guardPage's part of the load options
		if err := loadPage(ctx, pg, o); err != nil {
			t.Fatalf("loadPage: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if seen.Get("User-Agent") != "PageOptions/1" || seen.Get("X-All") != "a" || seen.Get("X-Scoped") != "s" || seen.Get("X-Other") != "" {
			t.Errorf("request headers %v", seen)
		}
		if c := seen.Get("Cookie"); c != "c1=v1" {
			t.Errorf("cookies %q, want c1=v1 only", c)
		}
		if got := evalString(t, ctx, pg, `matchMedia("(prefers-reduced-motion: reduce)").matches`); got != "true" {
			t.Error("the media feature is not emulated")
		}
	})

	t.Run("a thenable wait_for", func(t *testing.T) {
		ctx, pg := stagePage(t, r)
		if err := loadPage(ctx, pg, loadOptions{url: s.URL + "/page", media: "print"}); err != nil {
			t.Fatalf("loadPage: %v", err)
		}
		// A promise is truthy at once; its value is false until the timer.
		if _, err := waitReady(ctx, pg, readyOptions{waitFor: `Promise.resolve(window.ready === true)`}); err != nil {
			t.Fatalf("waitReady: %v", err)
		}
		if got := evalString(t, ctx, pg, "window.ready === true"); got != "true" {
			t.Error("wait_for returned before its promise's value was true")
		}
	})

	t.Run("one page", func(t *testing.T) {
		ctx, pg := stagePage(t, r)
		if err := loadPage(ctx, pg, loadOptions{html: `<div style="height:3000px">TALL</div>`, media: "print"}); err != nil {
			t.Fatalf("loadPage: %v", err)
		}
		in := spec.Options{}.Settings()
		got, err := measure(ctx, pg, measureOptions{singlePage: true}, in)
		if err != nil {
			t.Fatal(err)
		}
		if got.PaperHeightIn < 3000.0/pxPerInch || got.PaperWidthIn != in.PaperWidthIn || got.PageRanges != "1" {
			t.Errorf("paper %gx%g in, ranges %q", got.PaperWidthIn, got.PaperHeightIn, got.PageRanges)
		}
	})

	t.Run("page failures", func(t *testing.T) {
		ctx, pg := stagePage(t, r)
		html := `<img src="http://127.0.0.2:9/x.png"><script>throw new Error("boom")</script>`
		if err := loadPage(ctx, pg, loadOptions{html: html, media: "print"}); err != nil {
			t.Fatalf("loadPage: %v", err)
		}
		if _, err := waitReady(ctx, pg, readyOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			page *spec.PageOptions
			want string // "" no failure
		}{
			{&spec.PageOptions{}, ""},
			{&spec.PageOptions{FailOnConsoleExceptions: true}, "(console exceptions):\nError: boom"},
			{&spec.PageOptions{FailOnResourceLoadingFailed: true}, "(resource loading failed):\nresource Image: net::ERR_CONNECTION_REFUSED"},
		} {
			err := checkPage(pg, readyOptions{page: tc.page}, &Stats{})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%+v: %v", tc.page, err)
			case tc.want != "" && (!errors.Is(err, ErrPageErrors) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%+v: %v, want ErrPageErrors with %q", tc.page, err, tc.want)
			}
		}
	})
}
