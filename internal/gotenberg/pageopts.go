package gotenberg

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The Chromium fields that become the export's page options
// (exportclient.PageOptions): the paper of any size, the failOn* family,
// cookies, extra headers with their scope, the emulated media features.
// Each is read as Gotenberg reads it, with its error texts.

// paper sets the paper of paperWidth and paperHeight: a named paper when
// the size is one (either way round), else a paper of that size.
func paper(f *form, o *exportclient.Options, page *exportclient.PageOptions) {
	width, height := f.inches("paperWidth", defaultPaperWidthIn), f.inches("paperHeight", defaultPaperHeightIn)
	if name, rotated, ok := namedPaper(width, height); ok {
		o.Paper = name
		o.Landscape = o.Landscape != rotated
		return
	}
	if width <= 0 || height <= 0 || width > spec.MaxPaperIn || height > spec.MaxPaperIn {
		f.errs = append(f.errs, fmt.Sprintf("Chromium does not handle the provided settings; please check for aberrant form values (paperWidth %g in, paperHeight %g in; each more than 0 and at most %g in)",
			width, height, spec.MaxPaperIn))
		return
	}
	page.PaperWidthIn, page.PaperHeightIn = width, height
}

// failOn reads the failOn* fields in Gotenberg's order. failOnHttpStatusCodes
// defaults to [499,599]; an empty list fails on no status.
func failOn(f *form, page *exportclient.PageOptions) {
	var codes []int
	if f.json("failOnHttpStatusCodes", &codes) {
		if codes == nil {
			codes = []int{}
		}
		page.FailOnHTTPStatus = codes
		if slices.Equal(codes, []int{499, 599}) {
			page.FailOnHTTPStatus = nil // the default: the key of an export that leaves it out
		}
	}
	f.json("failOnResourceHttpStatusCodes", &page.FailOnResourceHTTPStatus)
	f.json("ignoreResourceHttpStatusDomains", &page.IgnoreResourceDomains)
	page.FailOnResourceLoadingFailed = f.bool("failOnResourceLoadingFailed", false)
	page.FailOnConsoleExceptions = f.bool("failOnConsoleExceptions", false)
}

// gotenbergCookie is a cookie of the cookies field.
type gotenbergCookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Domain   string `json:"domain"`
	Path     string `json:"path"`
	Secure   bool   `json:"secure"`
	HTTPOnly bool   `json:"httpOnly"`
	SameSite string `json:"sameSite"`
}

// pageCookies reads cookies: each for its own domain, set in the render's
// own browser context (no other render sees them).
func pageCookies(f *form, page *exportclient.PageOptions) {
	var cookies []gotenbergCookie
	if !f.json("cookies", &cookies) {
		return
	}
	var errs []error
	for i, c := range cookies {
		if strings.TrimSpace(c.Name) == "" || strings.TrimSpace(c.Value) == "" || strings.TrimSpace(c.Domain) == "" {
			errs = append(errs, fmt.Errorf("cookie %d must have its name, value and domain set", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		f.invalid("cookies", f.value("cookies"), err)
		return
	}
	for _, c := range cookies {
		page.Cookies = append(page.Cookies, exportclient.PageCookie{Name: c.Name, Value: c.Value, Domain: c.Domain,
			Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: sameSite(c.SameSite)})
	}
}

// sameSite is a cookie's sameSite in Chromium's case, whatever the
// caller's ("lax": "Lax").
func sameSite(v string) string {
	switch strings.ToLower(v) {
	case "lax":
		return "Lax"
	case "strict":
		return "Strict"
	case "none":
		return "None"
	}
	return v
}

// Gotenberg's bounds of extraHttpHeaders.
const (
	maxExtraHeaders     = spec.MaxPageHeaders
	maxHeaderScopeBytes = 1024
)

// pageHeaders reads extraHttpHeaders: "value;scope=<regexp>" sends the
// header only with the requests whose URL the expression matches.
func pageHeaders(f *form, page *exportclient.PageOptions) {
	var headers map[string]string
	if !f.json("extraHttpHeaders", &headers) {
		return
	}
	if len(headers) > maxExtraHeaders {
		f.invalid("extraHttpHeaders", f.value("extraHttpHeaders"), fmt.Errorf("too many headers, got %d, expected at most %d", len(headers), maxExtraHeaders))
		return
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		h, err := scopedHeader(name, headers[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		page.Headers = append(page.Headers, h)
	}
	if err := errors.Join(errs...); err != nil {
		f.invalid("extraHttpHeaders", f.value("extraHttpHeaders"), err)
	}
}

// scopedHeader splits a header's value from its scope, as Gotenberg does:
// ';'-separated tokens, one of them "scope=<regexp>".
func scopedHeader(name, v string) (exportclient.ScopedHeader, error) {
	var scope string
	var tokens []string
	for _, tok := range strings.Split(v, ";") {
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(tok)), "scope") {
			if tok != "" {
				tokens = append(tokens, tok)
			}
			continue
		}
		parts := strings.SplitN(strings.Join(strings.Fields(tok), ""), "=", 2)
		if len(parts) != 2 || strings.ToLower(parts[0]) != "scope" || parts[1] == "" {
			return exportclient.ScopedHeader{}, fmt.Errorf("invalid scope '%s' for header '%s'", scope, name)
		}
		scope = parts[1]
	}
	if len(scope) > maxHeaderScopeBytes {
		return exportclient.ScopedHeader{}, fmt.Errorf("scope regex pattern for header '%s' is too long, got %d characters, expected at most %d", name, len(scope), maxHeaderScopeBytes)
	}
	if _, err := regexp.Compile(scope); err != nil {
		return exportclient.ScopedHeader{}, fmt.Errorf("invalid scope regex pattern for header '%s': %w", name, err)
	}
	return exportclient.ScopedHeader{Name: name, Value: strings.Join(tokens, "; "), Scope: scope}, nil
}

// pageMediaFeatures reads emulatedMediaFeatures: Gotenberg's object
// ({"prefers-reduced-motion":"reduce"}) or its clients' list of
// {"name","value"}.
func pageMediaFeatures(f *form, page *exportclient.PageOptions) {
	v := f.value("emulatedMediaFeatures")
	if v == "" {
		return
	}
	var list []exportclient.MediaFeature
	if strings.HasPrefix(v, "[") {
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			f.invalid("emulatedMediaFeatures", v, fmt.Errorf("unmarshal emulatedMediaFeatures: %w", err))
			return
		}
	} else {
		var features map[string]string
		if !f.json("emulatedMediaFeatures", &features) {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(features)) {
			list = append(list, exportclient.MediaFeature{Name: k, Value: features[k]})
		}
	}
	page.MediaFeatures = list
}
