package site

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// handlerDoer answers requests with an http.Handler in the test's own
// goroutine: no listener, so -short starts no server.
type handlerDoer struct {
	h    http.Handler
	mu   sync.Mutex
	seen []string
}

func (d *handlerDoer) Do(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.seen = append(d.seen, req.Method+" "+req.URL.Path)
	d.mu.Unlock()
	rec := httptest.NewRecorder()
	d.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err // as a client whose request's context ended
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

func (d *handlerDoer) requests() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen...)
}

// pages is a site of HTML pages by path; a stylesheet at /style.css with
// the ETag in etag.
type pages struct {
	mu    sync.Mutex
	html  map[string]string
	etag  string
	delay time.Duration
}

func (p *pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-r.Context().Done():
			return
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.URL.Path == "/style.css" {
		w.Header().Set("ETag", p.etag)
		fmt.Fprint(w, "body{}")
		return
	}
	body, ok := p.html[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, body)
}

func navPage(links ...string) string {
	var b strings.Builder
	b.WriteString(`<html><body><nav><ul>`)
	for _, l := range links {
		b.WriteString(l)
	}
	b.WriteString(`</ul></nav></body></html>`)
	return b.String()
}

func li(href, title string) string { return `<li><a href="` + href + `">` + title + `</a></li>` }

func discover(t *testing.T, site http.Handler, s Spec, cfg Config) (Result, *handlerDoer, error) {
	t.Helper()
	d := &handlerDoer{h: site}
	cfg.Client = d
	if s.URL == "" {
		s.URL = "http://docs.test/"
	}
	res, err := Discover(context.Background(), cfg, s)
	return res, d, err
}

func TestDiscover_FoldsTheNavigation(t *testing.T) {
	site := &pages{html: map[string]string{
		"/": navPage(
			li("a.html", "A"),
			li("a.html#part", "A again"),        // a fragment of a page listed
			li("/", "Home"),                     // the start page itself
			li("javascript:alert(1)", "Script"), // not a page
			li("mailto:docs@docs.test", "Mail"),
			li("https://docs.test/b.html", "Other scheme"), // another origin
			li("http://docs.test:8080/b.html", "Other port"),
			li("http://evil.test/b.html", "Other host"),
			li("//evil.test/c.html", "Scheme-relative"),
			li("b.html", "B"),
			li("./b.html?x=1", "B with a query"), // another page: queries matter
			li("sub/../b.html", "B by another path"),
			li("  c.html  ", "  C \n spaced "),
			li("a.html", "A loops back"),
		),
		"/a.html": "<p>a</p>", "/b.html": "<p>b</p>", "/c.html": "<p>c</p>", "/b.html?x=1": "",
	}}
	res, _, err := discover(t, site, Spec{Revision: "r1"}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Chapter{
		{URL: "http://docs.test/a.html", Title: "A", Revision: "r1"},
		{URL: "http://docs.test/", Title: "Home", Revision: "r1"},
		{URL: "http://docs.test/b.html", Title: "B", Revision: "r1"},
		{URL: "http://docs.test/b.html?x=1", Title: "B with a query", Revision: "r1"},
		{URL: "http://docs.test/c.html", Title: "C spaced", Revision: "r1"},
	}
	if fmt.Sprint(res.Chapters) != fmt.Sprint(want) {
		t.Errorf("chapters\n got %v\nwant %v", res.Chapters, want)
	}
	if res.Requests != 1 {
		t.Errorf("%d requests with an explicit revision; want the start page only", res.Requests)
	}
}

func TestDiscover_Refusals(t *testing.T) {
	many := make([]string, spec.MaxChapters+1)
	for i := range many {
		many[i] = li(fmt.Sprintf("p%d.html", i), fmt.Sprint("P", i))
	}
	for _, tc := range []struct {
		name     string
		site     *pages
		spec     Spec
		cfg      Config
		sentinel error
		field    string
		says     string
	}{
		{"1001 chapters", &pages{html: map[string]string{"/": navPage(many...)}}, Spec{Revision: "r"}, Config{},
			ErrTooMany, "source.site", "more than 1000 pages"},
		{"a page over the limit", &pages{html: map[string]string{"/": navPage(li("a.html", "A")) + strings.Repeat(" ", 2000)}}, Spec{}, Config{MaxPageBytes: 1024},
			ErrTooLarge, "source.site", "http://docs.test/ is larger than the page limit of 1024 bytes"},
		{"a chapter over the limit", &pages{html: map[string]string{"/": navPage(li("a.html", "A")), "/a.html": strings.Repeat("x", 2000)}}, Spec{}, Config{MaxPageBytes: 1024},
			ErrTooLarge, "source.site", "http://docs.test/a.html is larger than"},
		{"no navigation", &pages{html: map[string]string{"/": `<p>Hello</p>`}}, Spec{}, Config{},
			ErrNoChapters, "source.site.nav", "no navigation of a generator it knows"},
		{"only other origins", &pages{html: map[string]string{"/": navPage(li("http://evil.test/", "E"), li("javascript:void(0)", "J"))}}, Spec{}, Config{},
			ErrNoChapters, "source.site.nav", "2 links, none a page of the site's origin"},
		{"include lets nothing through", &pages{html: map[string]string{"/": navPage(li("a.html", "A"))}}, Spec{Include: []string{"/guide/**"}}, Config{},
			ErrNoChapters, "source.site.include", "none of the site's origin that include and exclude let through"},
		{"a selector that selects nothing", &pages{html: map[string]string{"/": navPage(li("a.html", "A"))}}, Spec{Nav: "#toc a"}, Config{},
			ErrNoChapters, "source.site.nav", "no links in the navigation #toc a"},
		{"not a selector", &pages{html: map[string]string{"/": navPage(li("a.html", "A"))}}, Spec{Nav: "ul >> a"}, Config{},
			spec.ErrInvalid, "source.site.nav", "not a generator"},
		{"a sitemap index", &pages{html: map[string]string{"/sitemap.xml": `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>http://docs.test/a.xml</loc></sitemap></sitemapindex>`}}, Spec{Nav: NavSitemap}, Config{},
			spec.ErrInvalid, "source.site.nav", "a sitemap index"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := discover(t, tc.site, tc.spec, tc.cfg)
			if !errors.Is(err, tc.sentinel) || !errors.Is(err, spec.ErrInvalid) {
				t.Fatalf("err %v, want %v and spec.ErrInvalid", err, tc.sentinel)
			}
			if f := spec.FirstField(err); f != tc.field {
				t.Errorf("field %q, want %q (%v)", f, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err %q does not say %q", err, tc.says)
			}
		})
	}
}

func TestDiscover_StartPageAnswers404(t *testing.T) {
	_, _, err := discover(t, &pages{}, Spec{}, Config{})
	var pe *PageError
	if !errors.As(err, &pe) || pe.Status != 404 || !pe.Final() {
		t.Fatalf("err %v, want a final PageError 404", err)
	}
}

func TestDiscover_Deadline(t *testing.T) {
	site := &pages{html: map[string]string{"/": navPage(li("a.html", "A"))}, delay: time.Minute}
	start := time.Now()
	_, _, err := discover(t, site, Spec{}, Config{Timeout: 50 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "site discovery took longer than 50ms") {
		t.Fatalf("err %v, want the discovery deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the deadline ended the discovery after %s", d)
	}
}

func TestDiscover_MaxChaptersKeepsTheFirst(t *testing.T) {
	site := &pages{html: map[string]string{"/": navPage(li("a.html", "A"), li("b.html", "B"), li("c.html", "C"))}}
	res, _, err := discover(t, site, Spec{MaxChapters: 2, Revision: "r", Exclude: []string{"/a.*"}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := titles(res.Chapters); fmt.Sprint(got) != "[B C]" {
		t.Errorf("titles %v, want [B C]", got)
	}
}

// A chapter's revision changes with its HTML and with what it loads, and
// with nothing else; a resource several chapters load is asked for once.
func TestDiscover_RevisionsFollowTheContent(t *testing.T) {
	css := `<link rel="stylesheet" href="/style.css">`
	site := &pages{etag: `"v1"`, html: map[string]string{
		"/":       navPage(li("a.html", "A"), li("b.html", "B"), li("c.html", "C")),
		"/a.html": css + "<p>a</p>",
		"/b.html": css + "<p>b</p>",
		"/c.html": "<p>c</p><img src='data:image/png;base64,AAAA'>",
	}}
	revs := func() ([]string, []string) {
		t.Helper()
		res, d, err := discover(t, site, Spec{}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(res.Chapters))
		for i, c := range res.Chapters {
			out[i] = c.Revision
			if !strings.HasPrefix(c.Revision, revisionVersion) || len(c.Revision) > spec.MaxRevisionBytes {
				t.Errorf("revision %q", c.Revision)
			}
		}
		return out, d.requests()
	}
	first, reqs := revs()
	heads := 0
	for _, r := range reqs {
		if r == "HEAD /style.css" {
			heads++
		}
	}
	if heads != 1 || len(reqs) != 5 {
		t.Errorf("requests %q: want the start page, 3 chapters and one HEAD of the stylesheet", reqs)
	}
	again, _ := revs()
	if fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("an unchanged site: revisions %v then %v", first, again)
	}
	site.mu.Lock()
	site.html["/b.html"] = css + "<p>b, edited</p>"
	site.mu.Unlock()
	edited, _ := revs()
	if edited[0] != first[0] || edited[1] == first[1] || edited[2] != first[2] {
		t.Errorf("b edited: revisions %v then %v; want only the second to change", first, edited)
	}
	site.mu.Lock()
	site.etag = `"v2"`
	site.mu.Unlock()
	restyled, _ := revs()
	if restyled[0] == edited[0] || restyled[1] == edited[1] || restyled[2] != edited[2] {
		t.Errorf("the stylesheet changed: revisions %v then %v; want a and b to change", edited, restyled)
	}
}
