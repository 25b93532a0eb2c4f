package gotenberg

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestPDFFormats: merge and pdfengines/convert make the PDF claim the
// PDF/A level asked, and refuse with Gotenberg's texts what it refuses.
func TestPDFFormats(t *testing.T) {
	h := New(Config{})
	pdf := part{"files", "page_1.pdf", testsupport.TextPDF("Page 1")}
	pdf2 := part{"files", "page_2.pdf", testsupport.TextPDF("Page 2")}
	embed := part{"embeds", "a.xml", []byte("<a/>")}
	for _, tc := range []struct {
		name   string
		route  string
		parts  []part
		status int
		want   string // in the body
	}{
		{"merge 1b", "/forms/pdfengines/merge", []part{pdf, pdf2, {key: "pdfa", value: "PDF/A-1b"}}, 200, "<pdfaid:part>1</pdfaid:part>"},
		{"convert 2b", "/forms/pdfengines/convert", []part{pdf, {key: "pdfa", value: "PDF/A-2b"}}, 200, "<pdfaid:part>2</pdfaid:part>"},
		{"merge 3b embeds", "/forms/pdfengines/merge", []part{pdf, pdf2, embed, {key: "pdfa", value: "PDF/A-3b"}}, 200, "<pdfaid:part>3</pdfaid:part>"},
		{"bad value", "/forms/pdfengines/merge", []part{pdf, pdf2, {key: "pdfa", value: "foo"}}, 400, formatNotSupported},
		{"bad pdfua", "/forms/pdfengines/convert", []part{pdf, {key: "pdfua", value: "foo"}}, 400, "form field 'pdfua' is invalid"},
		{"no format", "/forms/pdfengines/convert", []part{pdf}, 400, "either 'pdfa' or 'pdfua' form fields must be provided"},
		{"encrypt", "/forms/pdfengines/merge", []part{pdf, pdf2, {key: "pdfa", value: "PDF/A-1b"}, {key: "userPassword", value: "s"}}, 400, "PDF/A format is incompatible with encryption"},
		{"embeds 1b", "/forms/pdfengines/merge", []part{pdf, pdf2, embed, {key: "pdfa", value: "PDF/A-1b"}}, 400, "PDF format 'PDF/A-1b' does not support embedded files"},
		{"ua untagged", "/forms/pdfengines/convert", []part{pdf, {key: "pdfua", value: "true"}}, 400, "form field 'pdfua' cannot be honoured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := postEngine(t, h, tc.route, tc.parts...)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				body := rec.Body.String()
				if len(body) > 300 {
					body = body[:300]
				}
				t.Fatalf("%d %q, want %d with %q", rec.Code, body, tc.status, tc.want)
			}
			if tc.status == http.StatusOK && !strings.Contains(rec.Body.String(), "/OutputIntents") {
				t.Error("no output intent")
			}
		})
	}
}
