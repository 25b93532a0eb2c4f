package spec

import (
	"strings"
	"testing"
)

// TestArtifactKey_PageOptions: every field family of the page options
// names its own artifact, and none given keeps the key of an export
// without them.
func TestArtifactKey_PageOptions(t *testing.T) {
	page := func(o PageOptions) func(*Envelope) { return func(p *Envelope) { p.Options.Page = &o } }
	mutations := map[string]func(*Envelope){
		"paper size":      page(PageOptions{PaperWidthIn: 3, PaperHeightIn: 4}),
		"single page":     page(PageOptions{SinglePage: true}),
		"omit background": page(PageOptions{OmitBackground: true}),
		"user agent":      page(PageOptions{UserAgent: "UA/1"}),
		"media features":  page(PageOptions{MediaFeatures: []MediaFeature{{"prefers-reduced-motion", "reduce"}}}),
		"headers":         page(PageOptions{Headers: []ScopedHeader{{Name: "X-A", Value: "1"}}}),
		"header scope":    page(PageOptions{Headers: []ScopedHeader{{Name: "X-A", Value: "1", Scope: "a"}}}),
		"cookies":         page(PageOptions{Cookies: []PageCookie{{Name: "a", Value: "b", Domain: "x.example"}}}),
		"no status fails": page(PageOptions{FailOnHTTPStatus: []int{}}),
		"status list":     page(PageOptions{FailOnHTTPStatus: []int{404}}),
		"resource status": page(PageOptions{FailOnResourceHTTPStatus: []int{499}}),
		"ignored domains": page(PageOptions{FailOnResourceHTTPStatus: []int{499}, IgnoreResourceDomains: []string{"a.example"}}),
		"loading failed":  page(PageOptions{FailOnResourceLoadingFailed: true}),
		"exceptions":      page(PageOptions{FailOnConsoleExceptions: true}),
	}
	base := pageEnvelope().ArtifactKey()
	seen := map[string]string{base: "base"}
	for name, mutate := range mutations {
		p := pageEnvelope()
		mutate(&p)
		if errs := p.Options.Page.validate(); len(errs) > 0 {
			t.Fatalf("%s: %v", name, errs)
		}
		k := p.ArtifactKey()
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share key %s", name, other, k)
		}
		seen[k] = name
	}
	p := pageEnvelope()
	p.Options.Page = nil
	if p.ArtifactKey() != base {
		t.Error("no page options changed the key")
	}
}

func TestPageOptions_Semantics(t *testing.T) {
	var none *PageOptions
	if !none.MainStatusFails(404) || none.MainStatusFails(302) {
		t.Error("default main statuses: 400 and more")
	}
	p := &PageOptions{FailOnHTTPStatus: []int{}}
	if p.MainStatusFails(500) {
		t.Error("an empty list fails on nothing")
	}
	if !StatusListed([]int{499}, 404) || StatusListed([]int{499}, 500) || !StatusListed([]int{503}, 503) {
		t.Error("x99 stands for its hundred")
	}
	for host, want := range map[string]bool{"gethttpstatus.com": true, "a.gethttpstatus.com": true, "xgethttpstatus.com": false} {
		if IgnoredDomain(host, []string{"*.GetHttpStatus.com:443"}) != want {
			t.Errorf("IgnoredDomain(%s) != %v", host, want)
		}
	}
	s := Options{Landscape: true, Page: &PageOptions{PaperWidthIn: 3, PaperHeightIn: 4}}.Settings()
	if s.Paper != "" || s.PaperWidthIn != 3 || s.PaperHeightIn != 4 || !s.Landscape {
		t.Errorf("a paper of any size: %+v", s)
	}
}

func TestPageOptions_Validate(t *testing.T) {
	for name, tc := range map[string]struct {
		p    PageOptions
		want string
	}{
		"half a paper":   {PageOptions{PaperWidthIn: 3}, "options.page.paper_width_in"},
		"huge paper":     {PageOptions{PaperWidthIn: 1e6, PaperHeightIn: 1}, "options.page.paper_width_in"},
		"bad scope":      {PageOptions{Headers: []ScopedHeader{{Name: "X", Value: "1", Scope: "("}}}, "options.page.headers[0].scope"},
		"cookie header":  {PageOptions{Headers: []ScopedHeader{{Name: "Cookie", Value: "1"}}}, "options.page.headers[0]"},
		"cookie domain":  {PageOptions{Cookies: []PageCookie{{Name: "a", Value: "b"}}}, "options.page.cookies[0].domain"},
		"same site":      {PageOptions{Cookies: []PageCookie{{Name: "a", Value: "b", Domain: "x", SameSite: "lax"}}}, "same_site"},
		"status":         {PageOptions{FailOnHTTPStatus: []int{700}}, "options.page.fail_on_http_status"},
		"many features":  {PageOptions{MediaFeatures: make([]MediaFeature, MaxMediaFeatures+1)}, "options.page.media_features"},
		"user agent CR":  {PageOptions{UserAgent: "a\r\nX: b"}, "options.page.user_agent"},
		"feature braces": {PageOptions{MediaFeatures: []MediaFeature{{"a", "}"}}}, "options.page.media_features[0]"},
	} {
		errs := tc.p.validate()
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		if !strings.Contains(strings.Join(msgs, "\n"), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", name, msgs, tc.want)
		}
	}
}

func pageEnvelope() Envelope {
	return Envelope{V: 1, ManualID: "m", Version: "1", Source: EnvelopeSource{URL: "https://docs.example.com/p"}}
}
