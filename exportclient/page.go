package exportclient

import "github.com/pdfexport/pdfexport/internal/spec"

// PageOptions are Options.Page: how the page is loaded, judged and printed
// beyond the paper names and margins (a Chromium caller's per-render
// settings). Every field is part of the artifact's identity.
type PageOptions struct {
	// PaperWidthIn and PaperHeightIn, both set, are a paper of any size.
	PaperWidthIn  float64 `json:"paper_width_in,omitempty"`
	PaperHeightIn float64 `json:"paper_height_in,omitempty"`
	// SinglePage prints the page on one sheet as large as its content.
	SinglePage bool `json:"single_page,omitempty"`
	// OmitBackground prints on a transparent page (with PrintBackground).
	OmitBackground bool `json:"omit_background,omitempty"`
	// UserAgent replaces the browser's user agent.
	UserAgent string `json:"user_agent,omitempty"`
	// MediaFeatures are the CSS media features emulated.
	MediaFeatures []MediaFeature `json:"media_features,omitempty"`
	// Headers go with every request whose URL their Scope (a regular
	// expression, "" for all) matches.
	Headers []ScopedHeader `json:"headers,omitempty"`
	// Cookies are set in the render's own browser context.
	Cookies []PageCookie `json:"cookies,omitempty"`
	// FailOnHTTPStatus: the main document's statuses that fail the export
	// (x99 stands for its hundred); nil: 400 and more; empty: none.
	FailOnHTTPStatus []int `json:"fail_on_http_status"`
	// FailOnResourceHTTPStatus: the same for sub-resources, except those
	// of hosts under IgnoreResourceDomains.
	FailOnResourceHTTPStatus []int    `json:"fail_on_resource_http_status,omitempty"`
	IgnoreResourceDomains    []string `json:"ignore_resource_domains,omitempty"`
	// FailOnResourceLoadingFailed fails on a sub-resource not loaded.
	FailOnResourceLoadingFailed bool `json:"fail_on_resource_loading_failed,omitempty"`
	// FailOnConsoleExceptions fails on an uncaught exception.
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
	SameSite string `json:"same_site,omitempty"`
}

func (p *PageOptions) spec() *spec.PageOptions {
	if p == nil {
		return nil
	}
	out := &spec.PageOptions{PaperWidthIn: p.PaperWidthIn, PaperHeightIn: p.PaperHeightIn, SinglePage: p.SinglePage,
		OmitBackground: p.OmitBackground, UserAgent: p.UserAgent, FailOnHTTPStatus: p.FailOnHTTPStatus,
		FailOnResourceHTTPStatus: p.FailOnResourceHTTPStatus, IgnoreResourceDomains: p.IgnoreResourceDomains,
		FailOnResourceLoadingFailed: p.FailOnResourceLoadingFailed, FailOnConsoleExceptions: p.FailOnConsoleExceptions}
	for _, f := range p.MediaFeatures {
		out.MediaFeatures = append(out.MediaFeatures, spec.MediaFeature(f))
	}
	for _, h := range p.Headers {
		out.Headers = append(out.Headers, spec.ScopedHeader(h))
	}
	for _, c := range p.Cookies {
		out.Cookies = append(out.Cookies, spec.PageCookie(c))
	}
	return out
}

func publicPage(p *spec.PageOptions) *PageOptions {
	if p == nil {
		return nil
	}
	out := &PageOptions{PaperWidthIn: p.PaperWidthIn, PaperHeightIn: p.PaperHeightIn, SinglePage: p.SinglePage,
		OmitBackground: p.OmitBackground, UserAgent: p.UserAgent, FailOnHTTPStatus: p.FailOnHTTPStatus,
		FailOnResourceHTTPStatus: p.FailOnResourceHTTPStatus, IgnoreResourceDomains: p.IgnoreResourceDomains,
		FailOnResourceLoadingFailed: p.FailOnResourceLoadingFailed, FailOnConsoleExceptions: p.FailOnConsoleExceptions}
	for _, f := range p.MediaFeatures {
		out.MediaFeatures = append(out.MediaFeatures, MediaFeature(f))
	}
	for _, h := range p.Headers {
		out.Headers = append(out.Headers, ScopedHeader(h))
	}
	for _, c := range p.Cookies {
		out.Cookies = append(out.Cookies, PageCookie(c))
	}
	return out
}
