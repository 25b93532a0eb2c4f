package gotenberg

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
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
	page := &exportclient.PageOptions{}
	f.mark("downloadFrom") // read before the route's own fields (download.go)
	loadFields(f, o, page)
	omit := f.bool("omitBackground", false)
	o.Landscape = f.bool("landscape", false)
	background := f.bool("printBackground", false)
	o.PrintBackground = &background
	if scale := f.float("scale", 1); scale != 1 {
		o.Scale = &scale
	}
	page.SinglePage = f.bool("singlePage", false)
	paper(f, o, page)
	margins := &exportclient.Margins{}
	for _, m := range []struct {
		key string
		dst **float64
	}{{"marginTop", &margins.Top}, {"marginBottom", &margins.Bottom}, {"marginLeft", &margins.Left}, {"marginRight", &margins.Right}} {
		mm := math.Round(f.inches(m.key, defaultMarginIn)*25.4*1000) / 1000
		*m.dst = &mm
	}
	o.MarginMM = margins
	o.PageRanges = f.value("nativePageRanges")
	o.PreferCSSPageSize = f.bool("preferCssPageSize", false)
	o.Outline = f.bool("generateDocumentOutline", false)
	o.Tagged = f.bool("generateTaggedPdf", false)
	if ua, _ := strconv.ParseBool(f.value("pdfua")); ua {
		o.Tagged = true // PDF/UA claims the structure tree the render writes; the field is judged by convertStep
	}
	if omit {
		if !background {
			f.errs = append(f.errs, "omitBackground requires printBackground set to true")
		}
		page.OmitBackground = true
	}
	if !reflect.DeepEqual(*page, exportclient.PageOptions{}) {
		o.Page = page
	}
}

// loadFields reads the fields of loading the page and what fails it,
// which every Chromium route shares (the screenshots' too), in
// Gotenberg's order, so that the invalid fields are named in it.
func loadFields(f *form, o *exportclient.Options, page *exportclient.PageOptions) {
	f.bool("skipNetworkIdleEvent", true)
	f.bool("skipNetworkAlmostIdleEvent", true)
	failOn(f, page)
	o.WaitFor = waitExpression(f)
	pageCookies(f, page)
	page.UserAgent = f.text("userAgent")
	pageHeaders(f, page)
	o.Media = f.oneOf("emulatedMediaType", "screen", "print")
	pageMediaFeatures(f, page)
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
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	// Each part may be a promise (or a thenable): awaited for its value.
	for i, p := range parts {
		parts[i] = "!!(await (" + p + "\n))"
	}
	return "(async () => " + strings.Join(parts, " && ") + ")()"
}

// fieldNames are the form fields the validation errors of the export's
// JSON fields stand for.
var fieldNames = map[string]string{
	"source.url": "url", "source.html": "index.html", "source.headers": "extraHttpHeaders", "source.cookies": "cookies",
	"options.page.paper_width_in": "paperWidth", "options.page.paper_height_in": "paperHeight",
	"options.page.user_agent": "userAgent", "options.page.headers": "extraHttpHeaders", "options.page.cookies": "cookies",
	"options.page.media_features": "emulatedMediaFeatures", "options.page.fail_on_http_status": "failOnHttpStatusCodes",
	"options.page.fail_on_resource_http_status": "failOnResourceHttpStatusCodes",
	"options.page.ignore_resource_domains":      "ignoreResourceHttpStatusDomains",
	"options.page_ranges":                       "nativePageRanges", "options.scale": "scale", "options.wait_for": "waitForExpression",
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
