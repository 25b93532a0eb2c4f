package gotenberg

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Gotenberg's defaults where they differ from pdfexport's: Letter paper,
// 0.39 in margins, no backgrounds.
const (
	defaultPaperWidthIn  = 8.5
	defaultPaperHeightIn = 11
	defaultMarginIn      = 0.39
)

// paperTolerance is how close a paperWidth/paperHeight pair must be to a
// named paper: clients send A4 as 8.27 x 11.7 in, 210 x 297 mm or 595 x
// 842 pt, all within it.
const paperTolerance = 0.03

// MaxWaitDelay bounds waitDelay: a conversion waits for its PDF at most
// Config.Wait, and a delay is the page's time, not the caller's.
const MaxWaitDelay = 15 * time.Second

// chromiumOptions reads the form fields every Chromium conversion route
// shares into p.Options (and, for a URL, p.Source's credentials).
func chromiumOptions(f *form, p *exportclient.Payload, pageURL string) {
	o := &p.Options
	if f.bool("singlePage", false) {
		f.errs = append(f.errs, unsupported("singlePage", "the page is printed on pages of the paper size; set the size with paperWidth/paperHeight or the page's own @page rule and preferCssPageSize").Error())
	}
	width, height := f.inches("paperWidth", defaultPaperWidthIn), f.inches("paperHeight", defaultPaperHeightIn)
	o.Landscape = f.bool("landscape", false)
	if name, rotated, ok := namedPaper(width, height); ok {
		o.Paper = name
		o.Landscape = o.Landscape != rotated
	} else {
		f.errs = append(f.errs, unsupported("paperWidth", fmt.Sprintf("%.2f x %.2f in is not a paper size pdfexport prints; it prints %s (either way round, within %.2f in)",
			width, height, strings.Join(spec.PaperNames, ", "), paperTolerance)).Error())
	}
	margins := &exportclient.Margins{}
	for _, m := range []struct {
		key string
		dst **float64
	}{{"marginTop", &margins.Top}, {"marginRight", &margins.Right}, {"marginBottom", &margins.Bottom}, {"marginLeft", &margins.Left}} {
		mm := math.Round(f.inches(m.key, defaultMarginIn)*25.4*1000) / 1000
		*m.dst = &mm
	}
	o.MarginMM = margins
	o.PreferCSSPageSize = f.bool("preferCssPageSize", false)
	o.Outline = f.bool("generateDocumentOutline", false)
	o.Tagged = f.bool("generateTaggedPdf", false)
	background := f.bool("printBackground", false)
	o.PrintBackground = &background
	if f.bool("omitBackground", false) {
		if !background {
			f.errs = append(f.errs, "omitBackground requires printBackground set to true")
		} else {
			f.errs = append(f.errs, unsupported("omitBackground", "pages are printed on white; a transparent background is not offered").Error())
		}
	}
	if scale := f.float("scale", 1); scale != 1 {
		o.Scale = &scale
	}
	o.PageRanges = f.value("nativePageRanges")
	o.Media = f.oneOf("emulatedMediaType", "screen", "print")
	var features []json.RawMessage
	if f.json("emulatedMediaFeatures", &features) && len(features) > 0 {
		f.errs = append(f.errs, unsupported("emulatedMediaFeatures", "only emulatedMediaType is emulated").Error())
	}
	if f.has("userAgent") {
		f.errs = append(f.errs, unsupported("userAgent", "every page is fetched with the worker's own user agent").Error())
	}
	o.WaitFor = waitExpression(f)
	credentials(f, p, pageURL)
	failOn(f, o)
	if f.has("pdfa") {
		f.errs = append(f.errs, unsupported("pdfa", "PDF/A conversion needs LibreOffice, which pdfexport does not run").Error())
	}
	if f.bool("pdfua", false) {
		f.errs = append(f.errs, unsupported("pdfua", "PDF/UA conversion is not offered; generateTaggedPdf gives a tagged PDF").Error())
	}
	f.bool("skipNetworkIdleEvent", true)
	f.bool("skipNetworkAlmostIdleEvent", true)
}

// permissionFields are Gotenberg's encryption permissions (each true by
// default) and the permissions of options.encryption.allow they grant.
var permissionFields = []struct {
	field string
	allow []string
}{
	{"allowPrinting", []string{"print", "print_high"}},
	{"allowCopying", []string{"copy", "extract_accessibility"}},
	{"allowModifying", []string{"modify"}},
	{"allowAnnotating", []string{"annotate"}},
	{"allowFillingForms", []string{"fill_forms"}},
	{"allowAssembling", []string{"assemble"}},
}

func permissions(f *form) []string {
	var allow []string
	for _, p := range permissionFields {
		if f.bool(p.field, true) {
			allow = append(allow, p.allow...)
		}
	}
	return allow
}

// namedPaper is the paper of that size, and whether it is the paper turned
// (landscape).
func namedPaper(width, height float64) (name string, rotated, ok bool) {
	near := func(a, b float64) bool { return math.Abs(a-b) <= paperTolerance }
	for _, n := range spec.PaperNames {
		w, h, _ := spec.PaperSize(n)
		switch {
		case near(width, w) && near(height, h):
			return n, false, true
		case near(width, h) && near(height, w):
			return n, true, true
		}
	}
	return "", false, false
}

// waitExpression is the wait_for expression of waitForSelector,
// waitWindowStatus, waitForExpression and waitDelay, all of which must
// hold. The delay counts from the first time the others hold, which is
// when Gotenberg's delay starts too: once the page is otherwise ready.
func waitExpression(f *form) string {
	var parts []string
	if sel := f.value("waitForSelector"); sel != "" {
		q, _ := json.Marshal(sel)
		parts = append(parts, "document.querySelector("+string(q)+") !== null")
	}
	if st := f.value("waitWindowStatus"); st != "" {
		q, _ := json.Marshal(st)
		parts = append(parts, "window.status === "+string(q))
	}
	if expr := f.value("waitForExpression"); expr != "" {
		parts = append(parts, expr)
	}
	if d := f.duration("waitDelay"); d > MaxWaitDelay {
		f.invalid("waitDelay", f.value("waitDelay"), fmt.Errorf("at most %s", MaxWaitDelay))
	} else if d > 0 {
		parts = append(parts, fmt.Sprintf("(globalThis.__pdfexportDelayFrom ??= performance.now(), performance.now() - globalThis.__pdfexportDelayFrom >= %d)", d.Milliseconds()))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	for i, p := range parts {
		parts[i] = "(" + p + "\n)"
	}
	return strings.Join(parts, " && ")
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

// credentials maps cookies and extraHttpHeaders onto the export's
// per-export credentials, which pdfexport sends to the URL's own host and
// to no other; a cookie for another domain or a header scoped by a pattern
// would be a promise it does not keep, so those are refused.
func credentials(f *form, p *exportclient.Payload, pageURL string) {
	var cookies []gotenbergCookie
	if f.json("cookies", &cookies) {
		for i, c := range cookies {
			if c.Name == "" || c.Value == "" || c.Domain == "" {
				f.invalid("cookies", f.value("cookies"), fmt.Errorf("cookie %d must have its name, value and domain set", i))
				return
			}
		}
		if len(cookies) > 0 && pageURL == "" {
			f.errs = append(f.errs, unsupported("cookies", "a document sent as a file has no host to send cookies to").Error())
		}
	}
	var headers map[string]string
	if f.json("extraHttpHeaders", &headers) && len(headers) > 0 && pageURL == "" {
		f.errs = append(f.errs, unsupported("extraHttpHeaders", "a document sent as a file has no host to send headers to").Error())
	}
	if pageURL == "" {
		return
	}
	u, err := url.Parse(pageURL)
	if err != nil {
		return // the URL's own validation names it
	}
	for i, c := range cookies {
		if !sameHost(c.Domain, u) {
			f.errs = append(f.errs, unsupported("cookies", fmt.Sprintf("cookie %d is for domain '%s'; pdfexport sends cookies only to the URL's host %s", i, printable(c.Domain), u.Hostname())).Error())
			continue
		}
		p.Source.Cookies = append(p.Source.Cookies, exportclient.Cookie{Name: c.Name, Value: c.Value, Path: c.Path})
	}
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		v := headers[name]
		if strings.Contains(v, ";scope") {
			f.errs = append(f.errs, unsupported("extraHttpHeaders", fmt.Sprintf("header '%s' has a scope; pdfexport sends extra headers to the URL's host only, so leave the scope out", printable(name))).Error())
			continue
		}
		if p.Source.Headers == nil {
			p.Source.Headers = map[string]string{}
		}
		p.Source.Headers[name] = v
	}
}

// sameHost reports whether a cookie's domain (a host, maybe with a port or
// a leading dot) names u's host.
func sameHost(domain string, u *url.URL) bool {
	d := strings.TrimPrefix(strings.ToLower(domain), ".")
	if h, port, err := net.SplitHostPort(d); err == nil {
		if port != u.Port() && port != spec.DefaultPort(u.Scheme) {
			return false
		}
		d = h
	}
	return d == strings.ToLower(u.Hostname())
}

// failOn maps the failOn* fields. The main document answering 400 or more
// always fails an export, which is Gotenberg's default; another set of
// statuses is refused. Any resource status list fails on every resource
// answering 400 or more (or failing, or blocked), pdfexport's one rule.
func failOn(f *form, o *exportclient.Options) {
	var codes []int
	if f.json("failOnHttpStatusCodes", &codes) && !failsExactly4xx5xx(codes) {
		f.errs = append(f.errs, unsupported("failOnHttpStatusCodes", "the page answering 400 to 599 always fails the conversion ([499,599], the default); other sets are not offered").Error())
	}
	var resourceCodes []int
	if f.json("failOnResourceHttpStatusCodes", &resourceCodes) && len(resourceCodes) > 0 {
		o.FailOnResourceErrors = true
	}
	var domains []string
	if f.json("ignoreResourceHttpStatusDomains", &domains) && len(domains) > 0 {
		f.errs = append(f.errs, unsupported("ignoreResourceHttpStatusDomains", "resource failures are judged alike for every host").Error())
	}
	if f.bool("failOnResourceLoadingFailed", false) {
		o.FailOnResourceErrors = true
	}
	o.FailOnConsoleErrors = f.bool("failOnConsoleExceptions", false)
}

// failsExactly4xx5xx reports whether Gotenberg's status list (an entry
// ending in 99 stands for its hundred) is 400–599, no more, no less.
func failsExactly4xx5xx(codes []int) bool {
	var hundreds [6]bool
	for _, c := range codes {
		switch {
		case c == 499 || c == 599:
			hundreds[c/100] = true
		case c >= 400 && c < 600:
			return false // single statuses: a subset
		default:
			return false
		}
	}
	return hundreds[4] && hundreds[5]
}

// fieldNames are the form fields the validation errors of the export's
// JSON fields stand for.
var fieldNames = map[string]string{
	"source.url": "url", "source.html": "index.html", "source.headers": "extraHttpHeaders", "source.cookies": "cookies",
	"options.page_ranges": "nativePageRanges", "options.scale": "scale", "options.wait_for": "waitForExpression",
	"options.margin_mm.top": "marginTop", "options.margin_mm.right": "marginRight", "options.margin_mm.bottom": "marginBottom",
	"options.margin_mm.left": "marginLeft", "options.header_html": "header.html", "options.footer_html": "footer.html",
	"request_id":                  "Gotenberg-Trace",
	"options.screenshot.selector": "selector", "options.screenshot.format": "format", "options.screenshot.quality": "quality",
}

// formField is the form field (or file) an export field stands for.
func formField(field string) string {
	for f := field; f != ""; {
		if n, ok := fieldNames[f]; ok {
			return n
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return field
}
