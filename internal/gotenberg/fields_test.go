package gotenberg

import (
	"bytes"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
)

func TestParseInches(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		bad  bool
	}{
		{"8.5", 8.5, false}, {"1in", 1, false}, {"25.4mm", 1, false}, {"2.54cm", 1, false},
		{"72pt", 1, false}, {"96px", 1, false}, {"6pc", 1, false}, {"10 mm", 10 / 25.4, false}, {"0.5", 0.5, false},
		{"foo", 0, true}, {"-1in", 0, true}, {"NaN", 0, true}, {"1e400", 0, true}, {"mm", 0, true},
	} {
		got, err := parseInches(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("parseInches(%q) = %g, %v; want %g, bad %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestNamedPaper(t *testing.T) {
	for _, tc := range []struct {
		w, h    float64
		name    string
		rotated bool
		ok      bool
	}{
		{8.5, 11, "Letter", false, true}, {8.27, 11.7, "A4", false, true}, {210 / 25.4, 297 / 25.4, "A4", false, true},
		{595.0 / 72, 842.0 / 72, "A4", false, true}, {11, 8.5, "Letter", true, true}, {8.5, 14, "Legal", false, true},
		{5, 5, "", false, false}, {8.5, 11.2, "", false, false},
	} {
		name, rotated, ok := namedPaper(tc.w, tc.h)
		if name != tc.name || rotated != tc.rotated || ok != tc.ok {
			t.Errorf("namedPaper(%g, %g) = %q %v %v", tc.w, tc.h, name, rotated, ok)
		}
	}
}

// TestChromiumOptions: Gotenberg's fields and defaults become the export's
// options, and what pdfexport cannot do is refused by name.
func TestChromiumOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields map[string]string
		url    string
		check  func(o exportclient.Options, p exportclient.Payload) bool
		errs   []string
	}{
		{"defaults are Gotenberg's", nil, "", func(o exportclient.Options, _ exportclient.Payload) bool {
			return o.Paper == "Letter" && !o.Landscape && !*o.PrintBackground && *o.MarginMM.Top == 9.906 && o.Scale == nil
		}, nil},
		{"A4 landscape as a turned size", map[string]string{"paperWidth": "297mm", "paperHeight": "210mm"}, "", func(o exportclient.Options, _ exportclient.Payload) bool {
			return o.Paper == "A4" && o.Landscape
		}, nil},
		{"each field", map[string]string{"landscape": "true", "printBackground": "true", "scale": "0.8", "nativePageRanges": "1-2",
			"preferCssPageSize": "true", "generateDocumentOutline": "true", "generateTaggedPdf": "1", "emulatedMediaType": "screen",
			"failOnConsoleExceptions": "true", "failOnResourceLoadingFailed": "true", "marginLeft": "1in",
			"metadata": `{"Title":"T","Keywords":"a, b"}`, "userPassword": "u", "watermarkSource": "text", "watermarkExpression": "DRAFT"}, "", func(o exportclient.Options, _ exportclient.Payload) bool {
			// Metadata, encryption and watermarks are steps after the
			// render (post.go), not the render's options.
			return o.Landscape && *o.PrintBackground && *o.Scale == 0.8 && o.PageRanges == "1-2" && o.PreferCSSPageSize && o.Outline && o.Tagged &&
				o.Media == "screen" && o.Page.FailOnConsoleExceptions && o.Page.FailOnResourceLoadingFailed && *o.MarginMM.Left == 25.4 &&
				o.Metadata == nil && o.Encryption == nil && o.Watermark == nil
		}, nil},
		{"waits", map[string]string{"waitForSelector": "#x", "waitDelay": "2s", "waitForExpression": "window.ok"}, "", func(o exportclient.Options, _ exportclient.Payload) bool {
			return strings.Contains(o.WaitFor, `document.querySelector("#x")`) && strings.Contains(o.WaitFor, "window.ok") && strings.Contains(o.WaitFor, ">= 2000")
		}, nil},
		{"the page options", map[string]string{"cookies": `[{"name":"a","value":"b","domain":"other.example.com:8080","sameSite":"lax"}]`,
			"extraHttpHeaders": `{"X-A":"1","X-B":"2;scope=https?://docs\\.example\\.com/.*"}`, "userAgent": "UA/1", "singlePage": "true",
			"paperWidth": "3in", "paperHeight": "4in", "printBackground": "true", "omitBackground": "true",
			"emulatedMediaFeatures": `{"prefers-reduced-motion":"reduce"}`, "failOnHttpStatusCodes": "[]",
			"failOnResourceHttpStatusCodes": "[404]", "ignoreResourceHttpStatusDomains": `["cdn.example.com"]`},
			"https://docs.example.com/p", func(o exportclient.Options, p exportclient.Payload) bool {
				pg := o.Page
				return len(p.Source.Cookies) == 0 && len(pg.Cookies) == 1 && pg.Cookies[0].SameSite == "Lax" &&
					pg.Cookies[0].Domain == "other.example.com:8080" && len(pg.Headers) == 2 && pg.Headers[1].Value == "2" &&
					pg.Headers[1].Scope == `https?://docs\.example\.com/.*` && pg.UserAgent == "UA/1" && pg.SinglePage && pg.OmitBackground &&
					o.Paper == "" && pg.PaperWidthIn == 3 && pg.PaperHeightIn == 4 && pg.MediaFeatures[0] == exportclient.MediaFeature{Name: "prefers-reduced-motion", Value: "reduce"} &&
					pg.FailOnHTTPStatus != nil && len(pg.FailOnHTTPStatus) == 0 && pg.FailOnResourceHTTPStatus[0] == 404 && pg.IgnoreResourceDomains[0] == "cdn.example.com"
			}, nil},
		{"media features as a list", map[string]string{"emulatedMediaFeatures": `[{"name":"prefers-color-scheme","value":"dark"}]`}, "", func(o exportclient.Options, _ exportclient.Payload) bool {
			return o.Page.MediaFeatures[0].Value == "dark"
		}, nil},
		{"the default status list is no page option", map[string]string{"failOnHttpStatusCodes": "[499,599]"}, "", func(o exportclient.Options, _ exportclient.Payload) bool {
			return o.Page == nil
		}, nil},
		{"refusals", map[string]string{"omitBackground": "true", "extraHttpHeaders": `{"X":"1;scope=(","Y":"1;scope"}`, "waitDelay": "1m",
			"paperWidth": "0"},
			"https://docs.example.com/p", nil, []string{"omitBackground requires printBackground", "invalid scope regex pattern for header 'X'",
				"invalid scope '' for header 'Y'", "'waitDelay' is invalid", "Chromium does not handle the provided settings"}},
		{"bad values", map[string]string{"landscape": "foo", "scale": "foo", "marginTop": "foo", "emulatedMediaType": "tv", "cookies": "foo"}, "", nil,
			[]string{"form field 'landscape' is invalid (got 'foo', resulting to strconv.ParseBool", "'scale' is invalid", "'marginTop' is invalid",
				"'emulatedMediaType' is invalid", "'cookies' is invalid (got 'foo', resulting to unmarshal cookies"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &form{values: tc.fields}
			if f.values == nil {
				f.values = map[string]string{}
			}
			var p exportclient.Payload
			chromiumOptions(f, &p, tc.url)
			msg := ""
			if err := f.err(); err != nil {
				msg = err.Error()
			}
			for _, w := range tc.errs {
				if !strings.Contains(msg, w) {
					t.Errorf("errors lack %q:\n%s", w, msg)
				}
			}
			if tc.errs == nil && msg != "" {
				t.Fatalf("unexpected errors: %s", msg)
			}
			if tc.check != nil && !tc.check(p.Options, p) {
				t.Errorf("options %+v, source %+v", p.Options, p.Source)
			}
		})
	}
}

func TestURLReuse(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		header  map[string]string
		force   bool
		bad     bool
		sameAt  time.Duration // a conversion this much later shares the token
		otherAt time.Duration // one this much later does not
	}{
		{header: nil, force: true},
		{header: map[string]string{ReuseVersionHeader: "2026.1"}},
		{header: map[string]string{ReuseMaxAgeHeader: "600"}, sameAt: time.Second, otherAt: 700 * time.Second},
		{header: map[string]string{ReuseMaxAgeHeader: "10m"}, sameAt: time.Second, otherAt: 700 * time.Second},
		{header: map[string]string{ReuseMaxAgeHeader: "0"}, bad: true},
		{header: map[string]string{ReuseMaxAgeHeader: "soon"}, bad: true},
		{header: map[string]string{ReuseMaxAgeHeader: "60", ReuseVersionHeader: "1"}, bad: true},
		{header: map[string]string{ReuseVersionHeader: "a\x01b"}, bad: true},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		got, err := urlReuse(r, now)
		if (err != nil) != tc.bad || got.force != tc.force {
			t.Errorf("%v: %+v, %v", tc.header, got, err)
			continue
		}
		if tc.otherAt > 0 {
			same, _ := urlReuse(r, now.Add(tc.sameAt))
			other, _ := urlReuse(r, now.Add(tc.otherAt))
			if same.token != got.token || other.token == got.token {
				t.Errorf("%v: windows %q %q %q", tc.header, got.token, same.token, other.token)
			}
		}
	}
}

// TestVersionIsContentAddressed: the version hashes the files and the
// normalized options, not the trace or the order of uploads.
func TestVersionIsContentAddressed(t *testing.T) {
	c := func(trace string, files ...upload) conversion {
		v := conversion{kind: "html", files: files, reuse: fileReuse}
		v.payload.Source.HTML = "<p>x</p>"
		v.payload.RequestID = trace
		return v
	}
	a, b := upload{"a.css", []byte("a")}, upload{"b.png", []byte("b")}
	if c("t1", a, b).version() != c("t2", b, a).version() {
		t.Error("the trace or the upload order changed the version")
	}
	if c("t1", a, b).version() == c("t1", a, upload{"b.png", []byte("B")}).version() {
		t.Error("a file's bytes did not change the version")
	}
	landscape := c("t1", a)
	landscape.payload.Options.Landscape = true
	if landscape.version() == c("t1", a).version() {
		t.Error("an option did not change the version")
	}
}

func multipartRequest(t *testing.T, build func(mw *multipart.Writer)) *http.Request {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	build(mw)
	_ = mw.Close()
	r := httptest.NewRequest(http.MethodPost, "/forms/chromium/convert/html", &buf)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	return r
}

// TestReadFormLimits: a form is read within its limits, each hole pinned.
func TestReadFormLimits(t *testing.T) {
	lim := limits{bytes: 4096, parts: 4, valueBytes: 64}
	for _, tc := range []struct {
		name  string
		build func(mw *multipart.Writer)
		code  int
		want  string
	}{
		{"ok", func(mw *multipart.Writer) {
			_ = mw.WriteField("a", "1")
			w, _ := mw.CreateFormFile("files", "../../etc/index.html")
			_, _ = w.Write([]byte("<p>"))
		}, 0, ""},
		{"too many parts", func(mw *multipart.Writer) {
			for range 5 {
				_ = mw.WriteField("a", "1")
			}
		}, 413, "more than 4"},
		{"value too long", func(mw *multipart.Writer) { _ = mw.WriteField("a", strings.Repeat("x", 65)) }, 413, "longer than 64"},
		{"body too large", func(mw *multipart.Writer) {
			w, _ := mw.CreateFormFile("files", "x.bin")
			_, _ = w.Write(bytes.Repeat([]byte("x"), 5000))
		}, 413, "larger than 4096"},
		{"duplicate file", func(mw *multipart.Writer) {
			for range 2 {
				w, _ := mw.CreateFormFile("files", "index.html")
				_, _ = w.Write([]byte("x"))
			}
		}, 400, "sent twice"},
		{"control characters in a name", func(mw *multipart.Writer) {
			w, _ := mw.CreateFormFile("files", "a\u200bb.html")
			_, _ = w.Write([]byte("x"))
		}, 400, "not a usable file name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := readForm(httptest.NewRecorder(), multipartRequest(t, tc.build), lim)
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := f.file("index.html"); !ok || f.values["a"] != "1" {
					t.Errorf("form %+v", f)
				}
				return
			}
			he, ok := err.(*httpError)
			if !ok || he.status != tc.code || !strings.Contains(he.msg, tc.want) {
				t.Errorf("got %v, want %d %q", err, tc.code, tc.want)
			}
		})
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
	r.Header.Set("Content-Type", "application/json")
	if _, err := readForm(httptest.NewRecorder(), r, lim); err == nil || !strings.Contains(err.Error(), "multipart/form-data") {
		t.Errorf("a JSON body: %v", err)
	}
}
