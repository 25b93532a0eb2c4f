package gotenberg

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/assemble/engine"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestFailedErr_FromKindAndDetail: a failure the worker recorded with
// its kind and detail gets Gotenberg's words and status, whatever the
// error's text says; a kind without detail (a worker that records none)
// gets the kind's status and the worker's message.
func TestFailedErr_FromKindAndDetail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		st     exportclient.Status
		status int
		want   string
	}{
		{"resource status", exportclient.Status{Kind: spec.FailurePageErrors, Error: "x",
			Detail: &exportclient.FailureDetail{Check: spec.FailedResourceStatus, Offenders: []string{"https://a.example/400 - 400: Bad Request"}}},
			http.StatusConflict, "Invalid HTTP status code from resources:\nhttps://a.example/400 - 400: Bad Request"},
		{"console exceptions", exportclient.Status{Kind: spec.FailurePageErrors, Error: "x",
			Detail: &exportclient.FailureDetail{Check: spec.FailedConsoleExceptions, Offenders: []string{"Error: Exception 1 (x:1:2)", "Error: Exception 2 (x:3:4)"}}},
			http.StatusConflict, "Chromium console exceptions:\nError: Exception 1 (x:1:2)\nError: Exception 2 (x:3:4)"},
		{"resource loading", exportclient.Status{Kind: spec.FailurePageErrors, Error: "x",
			Detail: &exportclient.FailureDetail{Check: spec.FailedResourceLoading, Offenders: []string{"resource Stylesheet: net::ERR_CONNECTION_REFUSED"}}},
			http.StatusConflict, "Chromium failed to load resources: resource Stylesheet: net::ERR_CONNECTION_REFUSED"},
		{"main page status", exportclient.Status{Kind: spec.FailureHTTPStatus, Error: "x",
			Detail: &exportclient.FailureDetail{Status: 404, StatusText: "Not Found"}},
			http.StatusConflict, "Invalid HTTP status code from the main page: 404: Not Found"},
		{"selector", exportclient.Status{Kind: spec.FailureNoElement, Error: "x",
			Detail: &exportclient.FailureDetail{Selector: "#nope"}},
			http.StatusBadRequest, "The selector '#nope' (selector) matched no element with a visible box"},
		{"a text that reads like a page failure, no detail", exportclient.Status{Kind: spec.FailurePageErrors,
			Error: "page errors (console exceptions):\nError: x"},
			http.StatusConflict, "The conversion failed: page errors (console exceptions):\nError: x"},
		{"a time-out", exportclient.Status{Kind: spec.FailureTimeout, Error: "rendering k: timed out"},
			http.StatusServiceUnavailable, "Service Unavailable"},
		{"no kind", exportclient.Status{Error: "boom"}, http.StatusInternalServerError, "The conversion failed: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var he *httpError
			if err := failedErr(tc.st); !errors.As(err, &he) || he.status != tc.status || he.msg != tc.want {
				t.Errorf("failedErr = %v, want %d %q", err, tc.status, tc.want)
			}
		})
	}
}

// TestWaitExpression: no wait field, no expression; several are each
// awaited (a promise is waited for its value, not taken as truthy).
func TestWaitExpression(t *testing.T) {
	if got := waitExpression(&form{values: map[string]string{}}); got != "" {
		t.Errorf("no wait: %q", got)
	}
	got := waitExpression(&form{values: map[string]string{"waitForExpression": "p()", "waitWindowStatus": "ready"}})
	if !strings.HasPrefix(got, "(async () => ") || !strings.Contains(got, "!!(await (p()\n))") {
		t.Errorf("two waits: %q", got)
	}
}

// TestChromiumOptions_GotenbergOrder: the invalid fields are named in the
// order Gotenberg reads them.
func TestChromiumOptions_GotenbergOrder(t *testing.T) {
	f := &form{values: map[string]string{"generateTaggedPdf": "x", "skipNetworkIdleEvent": "x", "landscape": "x", "cookies": "x",
		"failOnConsoleExceptions": "x", "emulatedMediaType": "x", "marginTop": "x"}}
	chromiumOptions(f, &exportclient.Payload{}, "")
	var order []string
	for _, e := range f.errs {
		order = append(order, strings.SplitN(strings.TrimPrefix(e, "form field '"), "'", 2)[0])
	}
	want := "skipNetworkIdleEvent failOnConsoleExceptions cookies emulatedMediaType landscape marginTop generateTaggedPdf"
	if strings.Join(order, " ") != want {
		t.Errorf("order %v, want %s", order, want)
	}
}

// TestDownloads: downloadFrom fetches each file with its headers, named
// by Content-Disposition; a host off the list is 403, a failing answer
// and a missing name 400, too many bytes 413.
func TestDownloads(t *testing.T) {
	var gotHeader string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHeader = r.Header.Get("X-Foo")
		switch r.URL.Path {
		case "/index.html":
			w.Header().Set("Content-Disposition", `attachment; filename="index.html"`)
			w.Write([]byte("<p>downloaded</p>"))
		case "/noname":
			w.Write([]byte("x"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	hp := strings.TrimPrefix(srv.URL, "http://")
	h := &handler{cfg: Config{Download: NewDownloadClient(egress.Dialer{List: allowlist.MustParse(hp)})}}
	for _, tc := range []struct {
		name, field string
		budget      int64
		status      int
		msg         string
	}{
		{"a file", `[{"url":"` + srv.URL + `/index.html","extraHttpHeaders":{"X-Foo":"bar"}}]`, 1 << 20, 0, ""},
		{"not JSON", `foo`, 1 << 20, 400, "Invalid 'downloadFrom' form field value"},
		{"no URL", `[{"url":""}]`, 1 << 20, 400, "entry 0: URL must be set"},
		{"off the list", `[{"url":"http://127.0.0.2:9/x"}]`, 1 << 20, 403, "Unable to download file from 'http://127.0.0.2:9/x'"},
		{"a 404", `[{"url":"` + srv.URL + `/missing"}]`, 1 << 20, 400, "got status: '404 Not Found'"},
		{"no name", `[{"url":"` + srv.URL + `/noname"}]`, 1 << 20, 400, "No 'Content-Disposition' header"},
		{"too large", `[{"url":"` + srv.URL + `/index.html"}]`, 4, 413, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &form{values: map[string]string{"downloadFrom": tc.field}}
			err := h.downloads(context.Background(), f, tc.budget)
			var he *httpError
			if tc.status == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if u, ok := f.file("index.html"); !ok || string(u.data) != "<p>downloaded</p>" || gotHeader != "bar" {
					t.Errorf("files %v, header %q", f.files, gotHeader)
				}
				return
			}
			if !errors.As(err, &he) || he.status != tc.status || !strings.Contains(he.msg, tc.msg) {
				t.Errorf("%v, want %d %q", err, tc.status, tc.msg)
			}
		})
	}
}

// TestVersion_PageFields: each family of the page-option fields names its
// own artifact.
func TestVersion_PageFields(t *testing.T) {
	seen := map[string]string{}
	for name, fields := range map[string]map[string]string{
		"none":        {},
		"paper size":  {"paperWidth": "3in", "paperHeight": "4in"},
		"single page": {"singlePage": "true"},
		"background":  {"printBackground": "true", "omitBackground": "true"},
		"user agent":  {"userAgent": "UA/1"},
		"media":       {"emulatedMediaFeatures": `{"prefers-reduced-motion":"reduce"}`},
		"headers":     {"extraHttpHeaders": `{"X-A":"1"}`},
		"scope":       {"extraHttpHeaders": `{"X-A":"1;scope=a"}`},
		"cookies":     {"cookies": `[{"name":"a","value":"b","domain":"x.example"}]`},
		"statuses":    {"failOnHttpStatusCodes": "[]"},
		"resources":   {"failOnResourceHttpStatusCodes": "[499]"},
		"ignored":     {"failOnResourceHttpStatusCodes": "[499]", "ignoreResourceHttpStatusDomains": `["a.example"]`},
		"loading":     {"failOnResourceLoadingFailed": "true"},
		"exceptions":  {"failOnConsoleExceptions": "true"},
	} {
		f := &form{values: fields}
		c := conversion{kind: "html", reuse: fileReuse}
		c.payload.Source.HTML = "<p>x</p>"
		chromiumOptions(f, &c.payload, "")
		if err := f.err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := c.version()
		if other, dup := seen[v]; dup {
			t.Errorf("%s and %s share version %s", name, other, v)
		}
		seen[v] = name
	}
}

// TestDownloads_EngineRoutes: the PDF-engine routes take downloadFrom's
// files as their PDFs, as Gotenberg's do.
func TestDownloads_EngineRoutes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Foo") != "bar" {
			http.Error(w, "no header", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Disposition", `attachment; filename="`+strings.TrimPrefix(r.URL.Path, "/")+`"`)
		_, _ = w.Write(testsupport.TextPDF("Downloaded " + r.URL.Path))
	}))
	t.Cleanup(srv.Close)
	h := New(Config{Download: NewDownloadClient(egress.Dialer{List: allowlist.MustParse(strings.TrimPrefix(srv.URL, "http://"))})})
	from := `[{"url":"` + srv.URL + `/a.pdf","extraHttpHeaders":{"X-Foo":"bar"}},{"url":"` + srv.URL + `/b.pdf","extraHttpHeaders":{"X-Foo":"bar"}}]`
	rec := postEngine(t, h, "/forms/pdfengines/merge", part{"downloadFrom", from, nil})
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/pdf" {
		t.Fatalf("merge of downloads: %d %q", rec.Code, rec.Body.String())
	}
	n, err := api.PageCount(bytes.NewReader(rec.Body.Bytes()), engine.Conf())
	if err != nil || n != 2 {
		t.Fatalf("merged %d pages (%v), want the two downloads", n, err)
	}
	rec = postEngine(t, h, "/forms/pdfengines/merge", part{"downloadFrom", `[{"url":"http://127.0.0.2:9/x.pdf"}]`, nil})
	if rec.Code != http.StatusForbidden {
		t.Fatalf("a download off the list: %d %q, want 403", rec.Code, rec.Body.String())
	}
}
