package spec

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// PageOptions are the options of how the page is loaded, judged and
// printed beyond the paper names and margins of Options: what a Chromium
// caller (Gotenberg's form fields) sets per render. Every field changes
// the PDF, or whether there is one, so all of them are in the artifact's
// key (PrintSettings.Page).
type PageOptions struct {
	// PaperWidthIn and PaperHeightIn, both set, are a paper of any size
	// (portrait sense; Landscape turns it), instead of Options.Paper.
	PaperWidthIn  float64 `json:"paper_width_in,omitempty"`
	PaperHeightIn float64 `json:"paper_height_in,omitempty"`
	// SinglePage prints the whole page on one sheet as tall (landscape:
	// as wide and tall) as its content.
	SinglePage bool `json:"single_page,omitempty"`
	// OmitBackground prints on a transparent page instead of white
	// (needs the backgrounds printed).
	OmitBackground bool `json:"omit_background,omitempty"`
	// UserAgent replaces the browser's user agent for every request.
	UserAgent string `json:"user_agent,omitempty"`
	// MediaFeatures are the CSS media features emulated
	// (prefers-reduced-motion: reduce, ...).
	MediaFeatures []MediaFeature `json:"media_features,omitempty"`
	// Headers are sent with every request of the page whose URL their
	// Scope (a regular expression; "" every request) matches.
	Headers []ScopedHeader `json:"headers,omitempty"`
	// Cookies are set in the render's own browser context before the
	// load, for their domain.
	Cookies []PageCookie `json:"cookies,omitempty"`
	// FailOnHTTPStatus are the statuses of the main document that fail
	// the render (an entry ending in 99 stands for its hundred); nil: 400
	// and more; empty: none.
	FailOnHTTPStatus []int `json:"fail_on_http_status"`
	// FailOnResourceHTTPStatus are the statuses of sub-resources that
	// fail the render, except for hosts under IgnoreResourceDomains.
	FailOnResourceHTTPStatus []int    `json:"fail_on_resource_http_status,omitempty"`
	IgnoreResourceDomains    []string `json:"ignore_resource_domains,omitempty"`
	// FailOnResourceLoadingFailed fails the render on a sub-resource that
	// could not be loaded (refused, not found, blocked).
	FailOnResourceLoadingFailed bool `json:"fail_on_resource_loading_failed,omitempty"`
	// FailOnConsoleExceptions fails it on an uncaught exception.
	FailOnConsoleExceptions bool `json:"fail_on_console_exceptions,omitempty"`
}

// MediaFeature is one emulated CSS media feature.
type MediaFeature struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ScopedHeader is a header of PageOptions.Headers.
type ScopedHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Scope string `json:"scope,omitempty"`
}

// PageCookie is a cookie of PageOptions.Cookies.
type PageCookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Domain   string `json:"domain"`
	Path     string `json:"path,omitempty"`
	Secure   bool   `json:"secure,omitempty"`
	HTTPOnly bool   `json:"http_only,omitempty"`
	SameSite string `json:"same_site,omitempty"` // Strict, Lax, None or ""
}

// Bounds of PageOptions: a page's options are the caller's, so every count
// and size is bounded.
const (
	MaxPageHeaders       = 64
	MaxPageCookies       = 64
	MaxMediaFeatures     = 16
	MaxStatusCodes       = 64
	MaxIgnoredDomains    = 64
	MaxPageValueBytes    = 4096
	MaxPaperIn           = 200.0
	DefaultFailOnStatus  = 499 // with 599: the main document answering 400 to 599
	defaultFailOnStatus2 = 599
)

// MainStatusFails reports whether the main document answering code fails
// the render under p (nil p: 400 and more).
func (p *PageOptions) MainStatusFails(code int) bool {
	if p == nil || p.FailOnHTTPStatus == nil {
		return code >= 400
	}
	return StatusListed(p.FailOnHTTPStatus, code)
}

// StatusListed reports whether code is in list, where an entry x99
// stands for the hundred x00 to x99.
func StatusListed(list []int, code int) bool {
	for _, c := range list {
		if c == code || (c%100 == 99 && code/100 == c/100) {
			return true
		}
	}
	return false
}

// IgnoredDomain reports whether host is under one of the domains (a
// domain matches itself and its subdomains; "*." and "." prefixes,
// schemes, ports and paths are dropped, as Gotenberg does).
func IgnoredDomain(host string, domains []string) bool {
	host = strings.ToLower(host)
	for _, d := range domains {
		d = normalizeDomain(d)
		if d != "" && (host == d || strings.HasSuffix(host, "."+d)) {
			return true
		}
	}
	return false
}

func normalizeDomain(d string) string {
	d = strings.ToLower(strings.TrimSpace(d))
	if i := strings.Index(d, "://"); i >= 0 {
		d = d[i+3:]
	}
	d = strings.TrimPrefix(d, "//")
	if i := strings.IndexAny(d, "/?#"); i >= 0 {
		d = d[:i]
	}
	if i := strings.LastIndexByte(d, ':'); i >= 0 && !strings.Contains(d[i:], "]") {
		d = d[:i]
	}
	d = strings.TrimPrefix(d, "*.")
	return strings.TrimPrefix(d, ".")
}

var sameSites = []string{"", "Strict", "Lax", "None"}

// validate checks p's bounds and values.
func (p *PageOptions) validate() []error {
	if p == nil {
		return nil
	}
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldErr("options.page."+field, format, args...))
	}
	if (p.PaperWidthIn == 0) != (p.PaperHeightIn == 0) {
		add("paper_width_in", "paper_width_in and paper_height_in are set together")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"paper_width_in", p.PaperWidthIn}, {"paper_height_in", p.PaperHeightIn}} {
		if !(f.v >= 0 && f.v <= MaxPaperIn) || math.IsInf(f.v, 0) {
			add(f.name, "must be between 0 and %g in, got %g", MaxPaperIn, f.v)
		}
	}
	if len(p.UserAgent) > MaxPageValueBytes || !utf8.ValidString(p.UserAgent) || strings.ContainsAny(p.UserAgent, "\r\n") {
		add("user_agent", "must be one line of valid UTF-8 of at most %d bytes", MaxPageValueBytes)
	}
	errs = append(errs, p.validateLists()...)
	for i, h := range p.Headers {
		if err := CheckHeader(h.Name, h.Value); err != nil {
			add(fmt.Sprintf("headers[%d]", i), "%v", err)
		}
		if len(h.Scope) > MaxPageValueBytes {
			add(fmt.Sprintf("headers[%d].scope", i), "longer than %d bytes", MaxPageValueBytes)
		} else if _, err := regexp.Compile(h.Scope); err != nil {
			add(fmt.Sprintf("headers[%d].scope", i), "not a regular expression: %v", err)
		}
	}
	for i, c := range p.Cookies {
		if err := (Cookie{Name: c.Name, Value: c.Value, Path: c.Path}).Check(); err != nil {
			add(fmt.Sprintf("cookies[%d]", i), "%v", err)
		}
		if c.Domain == "" || len(c.Domain) > 253 || strings.ContainsAny(c.Domain, " ;,/\\\r\n") {
			add(fmt.Sprintf("cookies[%d].domain", i), "must be a host name")
		}
		if !slices.Contains(sameSites, c.SameSite) {
			add(fmt.Sprintf("cookies[%d].same_site", i), "must be Strict, Lax, None or empty, got %q", c.SameSite)
		}
	}
	return errs
}

// validateLists checks the counts of p's lists and their entries.
func (p *PageOptions) validateLists() []error {
	var errs []error
	for _, l := range []struct {
		name string
		n    int
		max  int
	}{{"headers", len(p.Headers), MaxPageHeaders}, {"cookies", len(p.Cookies), MaxPageCookies},
		{"media_features", len(p.MediaFeatures), MaxMediaFeatures},
		{"fail_on_http_status", len(p.FailOnHTTPStatus), MaxStatusCodes},
		{"fail_on_resource_http_status", len(p.FailOnResourceHTTPStatus), MaxStatusCodes},
		{"ignore_resource_domains", len(p.IgnoreResourceDomains), MaxIgnoredDomains}} {
		if l.n > l.max {
			errs = append(errs, fieldErr("options.page."+l.name, "more than %d entries", l.max))
		}
	}
	for _, codes := range [][]int{p.FailOnHTTPStatus, p.FailOnResourceHTTPStatus} {
		for _, c := range codes {
			if c < 100 || c > 599 {
				errs = append(errs, fieldErr("options.page.fail_on_http_status", "a status is between 100 and 599, got %d", c))
			}
		}
	}
	for i, f := range p.MediaFeatures {
		if f.Name == "" || len(f.Name) > 100 || len(f.Value) > 100 || strings.ContainsAny(f.Name+f.Value, "\r\n;{}") {
			errs = append(errs, fieldErr(fmt.Sprintf("options.page.media_features[%d]", i), "must be a CSS media feature name and value of at most 100 bytes each"))
		}
	}
	for i, d := range p.IgnoreResourceDomains {
		if len(d) > 253 {
			errs = append(errs, fieldErr(fmt.Sprintf("options.page.ignore_resource_domains[%d]", i), "longer than 253 bytes"))
		}
	}
	return errs
}

// applyPage resolves the page options into s: a paper of any size
// replaces the named paper ("" names none).
func (s *PrintSettings) applyPage() {
	if p := s.Page; p != nil && p.PaperWidthIn > 0 && p.PaperHeightIn > 0 {
		s.Paper = ""
		s.PaperWidthIn, s.PaperHeightIn = p.PaperWidthIn, p.PaperHeightIn
	}
}

// MissingFilePrefix starts the URL a document's relative reference to a
// file it was not sent with becomes (internal/gotenberg): a host nobody
// allows, whose refused requests a render reports as a file not found.
const MissingFilePrefix = "https://missing-file.pdfexport.invalid/"

// The kinds of page failure a render under PageOptions names, in its
// error as "page errors (KIND):" and one offender a line, which a caller
// (internal/gotenberg) words its own way.
const (
	FailedResourceStatus    = "resource HTTP status"
	FailedConsoleExceptions = "console exceptions"
	FailedResourceLoading   = "resource loading failed"
)
