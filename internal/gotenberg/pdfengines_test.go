package gotenberg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func tinyPNG() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 4)))
	return b.Bytes()
}

// part is one part of a test form: a field, or a file when data is set.
type part struct {
	key, value string
	data       []byte
}

func postEngine(t *testing.T, h http.Handler, route string, parts ...part) *httptest.ResponseRecorder {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		if p.data == nil {
			_ = mw.WriteField(p.key, p.value)
			continue
		}
		w, _ := mw.CreateFormFile(p.key, p.value)
		_, _ = w.Write(p.data)
	}
	_ = mw.Close()
	r := httptest.NewRequest(http.MethodPost, route, &buf)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// TestEngineMarksMetadataEncrypt: the stamp, watermark, metadata and
// encrypt routes and merge's steps answer as Gotenberg's, with its texts.
func TestEngineMarksMetadataEncrypt(t *testing.T) {
	h := New(Config{})
	pdf := part{"files", "page_1.pdf", testsupport.TextPDF("Page 1")}
	pdf2 := part{"files", "page_2.pdf", testsupport.TextPDF("Page 2")}
	for _, tc := range []struct {
		name   string
		route  string
		parts  []part
		status int
		want   string // the body holds it (a PDF: its content type)
		exact  bool
	}{
		{"stamp text", "/forms/pdfengines/stamp", []part{pdf, {"stampSource", "text", nil}, {"stampExpression", "DRAFT", nil}}, 200, "application/pdf", false},
		{"several stamps, the image's file by its field", "/forms/pdfengines/stamp", []part{pdf,
			{"stampSource", "text", nil}, {"stampExpression", "ONE", nil}, {"stampOptions", `{"rotation":"0","position":"tl","scale":"0.2 abs"}`, nil},
			{"stampSource", "image", nil}, {"stamp", "page_1.png", tinyPNG()}}, 200, "application/pdf", false},
		{"a watermark named like a document", "/forms/pdfengines/watermark", []part{pdf, {"watermarkSource", "pdf", nil}, {"watermark", "page_1.pdf", testsupport.TextPDF("W")}}, 200, "application/pdf", false},
		{"two PDFs stamped", "/forms/pdfengines/stamp", []part{pdf, pdf2, {"stampSource", "text", nil}, {"stampExpression", "X", nil}}, 200, "application/zip", false},
		{"no source", "/forms/pdfengines/stamp", []part{pdf}, 400, "Invalid form data: form field 'stampSource' is required", true},
		{"bad source", "/forms/pdfengines/watermark", []part{pdf, {"watermarkSource", "foo", nil}}, 400,
			"Invalid form data: form field 'watermarkSource' is invalid (got 'foo', resulting to wrong value, expected either 'text', 'image' or 'pdf')", true},
		{"no file for a pdf stamp", "/forms/pdfengines/stamp", []part{pdf, {"stampSource", "pdf", nil}, {"stampExpression", "/etc/hostname", nil}}, 400,
			"Invalid form data: a stamp file is required for image or pdf source", true},
		{"options not strings", "/forms/pdfengines/stamp", []part{pdf, {"stampSource", "text", nil}, {"stampExpression", "X", nil}, {"stampOptions", `{"scale":0.5}`, nil}}, 400,
			"form field 'stampOptions' is invalid", false},
		{"an option pdfcpu lacks", "/forms/pdfengines/stamp", []part{pdf, {"stampSource", "text", nil}, {"stampExpression", "X", nil}, {"stampOptions", `{"colour":"red"}`, nil}}, 400,
			"form field 'stampOptions' is invalid (got '{\"colour\":\"red\"}'", false},
		{"no PDF", "/forms/pdfengines/stamp", []part{{"stampSource", "text", nil}, {"stampExpression", "X", nil}}, 400, "Invalid form data: no form file found for extensions: [.pdf]", true},
		{"metadata required, then the PDFs", "/forms/pdfengines/metadata/write", nil, 400,
			"Invalid form data: form field 'metadata' is required\nno form file found for extensions: [.pdf]", true},
		{"metadata not JSON", "/forms/pdfengines/metadata/write", []part{pdf, {"metadata", "foo", nil}}, 400,
			"Invalid form data: form field 'metadata' is invalid (got 'foo', resulting to unmarshal metadata: invalid character 'o' in literal false (expecting 'a'))", true},
		{"metadata with a newline", "/forms/pdfengines/metadata/write", []part{pdf, {"metadata", `{"Title":"a\n-FileName=/tmp/x","-Bad":"x"}`, nil}}, 400,
			metadataRefused + " Refused keys: '-Bad' (not a tag name), 'Title' (contains a control character)", true},
		{"encrypt without a password", "/forms/pdfengines/encrypt", []part{pdf}, 400, "Invalid form data: a 'userPassword' or 'ownerPassword' is required", true},
		{"encrypt, owner only", "/forms/pdfengines/encrypt", []part{pdf, {"ownerPassword", "o", nil}, {"allowPrinting", "false", nil}}, 200, "application/pdf", false},
		{"merge with its steps", "/forms/pdfengines/merge", []part{pdf, pdf2, {"watermarkSource", "text", nil}, {"watermarkExpression", "W", nil},
			{"stampSource", "text", nil}, {"stampExpression", "S", nil}, {"metadata", `{"Title":"T"}`, nil}, {"userPassword", "u", nil}}, 200, "application/pdf", false},
		{"merge, restrictions without a password", "/forms/pdfengines/merge", []part{pdf, pdf2, {"allowCopying", "false", nil}}, 400,
			"Invalid form data: permission restrictions require a 'userPassword' or 'ownerPassword'", true},
		{"merge's bookmarks written", "/forms/pdfengines/merge", []part{pdf, pdf2, {"bookmarks", `[{"title":"x","page":1}]`, nil}}, 200,
			"application/pdf", false},
		{"merge's titles as bookmarks", "/forms/pdfengines/merge", []part{pdf, pdf2, {"titleBookmarks", "true", nil}}, 200,
			"application/pdf", false},
		{"merge's bookmarks past the pages", "/forms/pdfengines/merge", []part{pdf, pdf2, {"bookmarks", `[{"title":"x","page":9}]`, nil}}, 400,
			"merged.pdf", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := postEngine(t, h, tc.route, tc.parts...)
			body := rec.Body.String()
			if rec.Code != tc.status {
				t.Fatalf("%d %q, want %d", rec.Code, body, tc.status)
			}
			switch {
			case tc.status == 200 && rec.Header().Get("Content-Type") != tc.want:
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), tc.want)
			case tc.status != 200 && tc.exact && body != tc.want:
				t.Errorf("body %q, want %q", body, tc.want)
			case tc.status != 200 && !strings.Contains(body, tc.want):
				t.Errorf("body %q lacks %q", body, tc.want)
			}
		})
	}
}

// TestMetadataWriteThenRead: the metadata written reads back under
// Gotenberg's names; file operations are dropped.
func TestMetadataWriteThenRead(t *testing.T) {
	h := New(Config{})
	meta := `{"Author":"Julien Neuhart","Copyright":"Julien Neuhart","CreateDate":"2006-09-18T16:27:50-04:00","Keywords":["first","second"],"Marked":true,"PDFVersion":1.7,"Trapped":"Unknown","System:FileName":"stolen.pdf"}`
	rec := postEngine(t, h, "/forms/pdfengines/metadata/write", part{"files", "a.pdf", testsupport.TextPDF("A")}, part{"metadata", meta, nil})
	if rec.Code != 200 {
		t.Fatalf("write: %d %s", rec.Code, rec.Body.String())
	}
	rec = postEngine(t, h, "/forms/pdfengines/metadata/read", part{"files", "a.pdf", rec.Body.Bytes()})
	var got map[string]map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("read: %d %s", rec.Code, rec.Body.String())
	}
	m := got["a.pdf"]
	for k, v := range map[string]any{"Author": "Julien Neuhart", "Copyright": "Julien Neuhart", "CreateDate": "2006:09:18 16:27:50-04:00",
		"Marked": true, "PDFVersion": 1.7, "Trapped": "Unknown"} {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if kw, _ := m["Keywords"].([]any); len(kw) != 2 || m["FileName"] != nil {
		t.Errorf("read %v", m)
	}
}

// TestConversionSteps: a conversion's watermark, stamp, metadata and
// encryption fields are steps in Gotenberg's order, not render options,
// and their refusals come before anything renders.
func TestConversionSteps(t *testing.T) {
	f := &form{values: map[string]string{"metadata": `{"Title":"T"}`, "userPassword": "u"},
		all:   map[string][]string{"stampSource": {"text"}, "stampExpression": {"S"}, "watermarkSource": {"image"}},
		marks: map[string][]upload{"watermark": {{name: "w.png", data: tinyPNG()}}}}
	steps := postSteps(f)
	if err := f.err(); err != nil {
		t.Fatal(err)
	}
	var orders []int
	for _, s := range steps {
		orders = append(orders, s.order)
	}
	if want := []int{stepWatermark, stepStamp, stepMetadata, stepEncrypt}; fmt.Sprint(orders) != fmt.Sprint(want) {
		t.Errorf("steps %v, want %v", orders, want)
	}
	out, err := steps[0].run(t.Context(), []upload{{name: "x.pdf", data: testsupport.TextPDF("x")}})
	if err != nil || len(out) != 1 || !bytes.HasPrefix(out[0].data, []byte("%PDF")) {
		t.Errorf("the watermark step: %v %v", out, err)
	}
	for _, tc := range []struct {
		f    *form
		want string
	}{
		{&form{values: map[string]string{}, all: map[string][]string{"watermarkSource": {"pdf"}, "watermarkExpression": {"/etc/hostname"}}},
			"Invalid form data: a watermark file is required for image or pdf source"},
		{&form{values: map[string]string{"metadata": `{"Title":"a\rb"}`}}, metadataRefused},
		{&form{values: map[string]string{"allowPrinting": "false"}}, "Invalid form data: permission restrictions require a 'userPassword' or 'ownerPassword'"},
	} {
		postSteps(tc.f)
		if err := tc.f.err(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("err %v, want %q", err, tc.want)
		}
	}
}

// TestReadFormMarkFiles: a stamp or watermark file is found by its field
// and may share a document's or an asset's name.
func TestReadFormMarkFiles(t *testing.T) {
	f, err := readForm(httptest.NewRecorder(), multipartRequest(t, func(mw *multipart.Writer) {
		for _, field := range []string{"files", "watermark", "stamp"} {
			w, _ := mw.CreateFormFile(field, "logo.png")
			_, _ = w.Write([]byte(field))
		}
		_ = mw.WriteField("stampSource", "text")
		_ = mw.WriteField("stampSource", "image")
	}), limits{bytes: 4096, parts: 8, valueBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.files) != 1 || string(f.marks["watermark"][0].data) != "watermark" || string(f.marks["stamp"][0].data) != "stamp" {
		t.Errorf("files %v marks %v", f.files, f.marks)
	}
	if got := f.list("stampSource"); len(got) != 2 || got[1] != "image" {
		t.Errorf("stampSource %v", got)
	}
}
