package render

// The page options of a render (spec.PageOptions), each applied by the
// stage it belongs to: the user agent, cookies and media features before
// the load (applyLoad), the scoped headers by the request guard
// (guard.extraHeaders), a page on one sheet when measured (fitOnePage),
// a transparent background at the print (omitBackground).

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// scopedHeader is a header of spec.PageOptions.Headers, its scope
// compiled (nil: every request).
type scopedHeader struct {
	name, value string
	scope       *regexp.Regexp
}

// compileHeaders compiles the scopes of hs; Validate checked them, so one
// that does not compile (only a request that skipped it) is dropped.
func compileHeaders(hs []spec.ScopedHeader) []scopedHeader {
	var out []scopedHeader
	for _, h := range hs {
		sh := scopedHeader{name: h.Name, value: h.Value}
		if h.Scope != "" {
			re, err := regexp.Compile(h.Scope)
			if err != nil {
				continue
			}
			sh.scope = re
		}
		out = append(out, sh)
	}
	return out
}

// maxScopeURL bounds the URL a scope is matched against: Go's regexp is
// linear in its input, and this keeps each match short.
const maxScopeURL = 8 << 10

// extraHeaders are the request's headers with those of hs whose scope
// matches its URL added (replacing a header of the same name), or nil when
// none applies.
func extraHeaders(hs []scopedHeader, req *network.Request) []*fetch.HeaderEntry {
	if len(hs) == 0 || req == nil || !strings.HasPrefix(req.URL, "http") {
		return nil
	}
	u := req.URL
	if len(u) > maxScopeURL {
		u = u[:maxScopeURL]
	}
	var add []scopedHeader
	for _, h := range hs {
		if h.scope == nil || h.scope.MatchString(u) {
			add = append(add, h)
		}
	}
	if len(add) == 0 {
		return nil
	}
	entries := make([]*fetch.HeaderEntry, 0, len(req.Headers)+len(add))
	for k, v := range req.Headers {
		s, ok := v.(string)
		replaced := false
		for _, h := range add {
			replaced = replaced || strings.EqualFold(h.name, k)
		}
		if ok && !replaced {
			entries = append(entries, &fetch.HeaderEntry{Name: k, Value: s})
		}
	}
	for _, h := range add {
		entries = append(entries, &fetch.HeaderEntry{Name: h.name, Value: h.value})
	}
	return entries
}

// applyLoad sets, before the load, the page's user agent and its cookies
// (in the render's own browser context, which ends with it).
func applyLoad(ctx context.Context, pg *tabPage, o loadOptions) error {
	if o.userAgent != "" {
		if _, err := cdp.Call(ctx, pg.t, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: o.userAgent}); err != nil {
			return fmt.Errorf("%w: setting the user agent: %v", ErrNavigation, err)
		}
	}
	if len(o.cookies) == 0 {
		return nil
	}
	expires := time.Now().Add(time.Hour)
	if dl, ok := ctx.Deadline(); ok {
		expires = dl
	}
	params := make([]*network.CookieParam, 0, len(o.cookies))
	for _, c := range o.cookies {
		params = append(params, cookieParam(c, expires))
	}
	if _, err := cdp.Call(ctx, pg.t, network.SetCookies, network.SetCookiesParams{Cookies: params}); err != nil {
		return fmt.Errorf("%w: setting cookies: %v", ErrNavigation, err)
	}
	return nil
}

// cookieParam is c as Chromium sets it: a domain names a host without a
// port; an IP address takes a host-only cookie for it (a domain cookie
// cannot be set for an address).
func cookieParam(c spec.PageCookie, expires time.Time) *network.CookieParam {
	host := strings.TrimPrefix(c.Domain, ".")
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	p := &network.CookieParam{Name: c.Name, Value: c.Value, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly,
		SameSite: network.CookieSameSite(c.SameSite), Expires: cdp.TimeSinceEpoch(expires.Unix())}
	if p.Path == "" {
		p.Path = "/"
	}
	if net.ParseIP(strings.Trim(host, "[]")) != nil {
		scheme := "http"
		if c.Secure {
			scheme = "https"
		}
		p.URL = (&url.URL{Scheme: scheme, Host: host, Path: p.Path}).String()
	} else {
		p.Domain = host
	}
	return p
}

// mediaFeatures are the features of o as Emulation takes them.
func mediaFeatures(fs []spec.MediaFeature) []*emulation.MediaFeature {
	var out []*emulation.MediaFeature
	for _, f := range fs {
		out = append(out, &emulation.MediaFeature{Name: f.Name, Value: f.Value})
	}
	return out
}

// pxPerInch: Chromium's CSS pixels per inch.
const pxPerInch = 96

// fitOnePage sizes the paper of s to the laid-out content when o asks for
// one page: as tall as the content (and, landscape, as wide), margins
// added, the first page only (what a page break in the content still
// starts is left out).
func fitOnePage(ctx context.Context, pg *tabPage, o measureOptions, s spec.PrintSettings) (spec.PrintSettings, error) {
	if !o.singlePage {
		return s, nil
	}
	pg.progress.enter("render.measure", "measuring the content for one page")
	m, err := cdp.Call(ctx, pg.t, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil || m.CSSContentSize == nil {
		return s, fmt.Errorf("%w: measuring the content: %v", ErrNavigation, err)
	}
	vertical := (s.MarginTopMM + s.MarginBottomMM) / mmPerInch
	horizontal := (s.MarginLeftMM + s.MarginRightMM) / mmPerInch
	height := m.CSSContentSize.Height/pxPerInch + vertical
	if s.Landscape {
		// Landscape turns the paper: its width is the printed height.
		s.PaperWidthIn = height
		s.PaperHeightIn = m.CSSContentSize.Width/pxPerInch + horizontal
	} else {
		s.PaperHeightIn = height
	}
	s.PageRanges = "1"
	return s, nil
}

// omitBackground makes the page's default background transparent, so a
// page without its own background prints on none.
func omitBackground(ctx context.Context, pg *tabPage, o printOptions) error {
	if !o.omitBackground {
		return nil
	}
	// An alpha of 0 is left out of the command (omitzero), which Chromium
	// reads as opaque: the least alpha above it rounds to a transparent
	// colour all the same.
	_, err := cdp.Call(ctx, pg.t, emulation.SetDefaultBackgroundColorOverride,
		emulation.SetDefaultBackgroundColorOverrideParams{Color: &cdp.RGBA{A: 1e-9}})
	if err != nil {
		return fmt.Errorf("%w: making the background transparent: %v", ErrPrint, err)
	}
	return nil
}
