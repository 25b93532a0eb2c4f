package gotenberg

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func file(field, name string, data []byte) part { return part{key: field, value: name, data: data} }
func field(name, value string) part             { return part{key: name, value: value} }

// post sends a form to route on a handler without queue (the engine
// routes need none) and returns the answer.
func post(t *testing.T, route string, header map[string]string, parts ...part) *httptest.ResponseRecorder {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range parts {
		if p.data == nil {
			_ = mw.WriteField(p.key, p.value)
			continue
		}
		w, _ := mw.CreateFormFile(p.key, p.value)
		_, _ = w.Write(p.data)
	}
	_ = mw.Close()
	r := httptest.NewRequest(http.MethodPost, route, &body)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	for k, v := range header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	New(Config{}).ServeHTTP(rec, r)
	return rec
}

// answer is a response's files by name: the PDF itself, or a zip's.
func answer(t *testing.T, rec *httptest.ResponseRecorder) (string, map[string][]byte) {
	t.Helper()
	_, params, _ := mime.ParseMediaType(rec.Header().Get("Content-Disposition"))
	name, body := params["filename"], rec.Body.Bytes()
	if rec.Header().Get("Content-Type") != "application/zip" {
		return name, map[string][]byte{name: body}
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		files[f.Name], _ = io.ReadAll(rc)
		_ = rc.Close()
	}
	return name, files
}

func pageCount(t *testing.T, pdf []byte) int {
	t.Helper()
	n, err := api.PageCount(bytes.NewReader(pdf), engine.Conf())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSplitRoute: Gotenberg's names, content types and error texts, and
// the bound on the parts.
func TestSplitRoute(t *testing.T) {
	pages3 := file("files", "pages_3.pdf", testsupport.NumberedPDF(3))
	for _, tc := range []struct {
		name   string
		header map[string]string
		parts  []part
		code   int
		body   string         // the error, exactly
		answer string         // the answer's file name
		files  map[string]int // file: pages
	}{
		{"intervals", nil, []part{pages3, field("splitMode", "intervals"), field("splitSpan", "2")}, 200, "", "", map[string]int{"pages_3_0.pdf": 2, "pages_3_1.pdf": 1}},
		{"pages", nil, []part{pages3, field("splitMode", "pages"), field("splitSpan", "2-")}, 200, "", "", map[string]int{"pages_3_0.pdf": 1, "pages_3_1.pdf": 1}},
		{"unify", nil, []part{pages3, field("splitMode", "pages"), field("splitSpan", "2-"), field("splitUnify", "true")}, 200, "", "pages_3.pdf", map[string]int{"pages_3.pdf": 2}},
		{"named zip", map[string]string{outputFilenameHeader: "foo"}, []part{pages3, field("splitMode", "intervals"), field("splitSpan", "2")}, 200, "", "foo.zip", map[string]int{"pages_3_0.pdf": 2, "pages_3_1.pdf": 1}},
		{"rotated and flattened", nil, []part{pages3, field("splitMode", "intervals"), field("splitSpan", "2"), field("rotateAngle", "90"), field("flatten", "true")}, 200, "", "", map[string]int{"pages_3_0.pdf": 2, "pages_3_1.pdf": 1}},
		{"nothing", nil, nil, 400, "Invalid form data: form field 'splitMode' is required\nform field 'splitSpan' is required\nno form file found for extensions: [.pdf]", "", nil},
		{"bad mode", nil, []part{pages3, field("splitMode", "foo"), field("splitSpan", "2")}, 400, "Invalid form data: form field 'splitMode' is invalid (got 'foo', resulting to wrong value, expected either 'intervals' or 'pages')", "", nil},
		{"bad interval", nil, []part{pages3, field("splitMode", "intervals"), field("splitSpan", "foo")}, 400, "Invalid form data: form field 'splitSpan' is invalid (got 'foo', resulting to strconv.Atoi: parsing \"foo\": invalid syntax)", "", nil},
		{"bad pages", nil, []part{pages3, field("splitMode", "pages"), field("splitSpan", "foo")}, 400, "The requested split mode is not supported, or no PDF engine could process it. Valid modes: 'intervals', 'pages'.", "", nil},
		{"unify intervals", nil, []part{pages3, field("splitMode", "intervals"), field("splitSpan", "2"), field("splitUnify", "true")}, 400, "Invalid form data: form field 'splitUnify' is invalid (got 'true', resulting to unify is not available for split mode 'intervals')", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := post(t, "/forms/pdfengines/split", tc.header, tc.parts...)
			if rec.Code != tc.code {
				t.Fatalf("%d %q, want %d", rec.Code, rec.Body.String(), tc.code)
			}
			if tc.code != 200 {
				if rec.Body.String() != tc.body {
					t.Errorf("body %q\nwant %q", rec.Body.String(), tc.body)
				}
				return
			}
			name, files := answer(t, rec)
			if tc.answer != "" && name != tc.answer {
				t.Errorf("answer named %q, want %q", name, tc.answer)
			}
			if len(files) != len(tc.files) {
				t.Fatalf("files %v, want %v", slices.Collect(func(yield func(string) bool) {
					for k := range files {
						yield(k)
					}
				}), tc.files)
			}
			for n, pages := range tc.files {
				if got := pageCount(t, files[n]); got != pages {
					t.Errorf("%s: %d pages, want %d", n, got, pages)
				}
			}
		})
	}
}

// TestSplitRouteBounds: a split into more parts than allowed is a 400
// naming splitSpan, before any part is made.
func TestSplitRouteBounds(t *testing.T) {
	doc := file("files", "many.pdf", testsupport.NumberedPDF(engine.MaxSplitParts+1))
	for _, mode := range []string{"intervals", "pages"} {
		span := map[string]string{"intervals": "1", "pages": "1-"}[mode]
		rec := post(t, "/forms/pdfengines/split", nil, doc, field("splitMode", mode), field("splitSpan", span))
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "splitSpan") || !strings.Contains(rec.Body.String(), fmt.Sprint(engine.MaxSplitParts)) {
			t.Errorf("%s: %d %q, want a 400 naming splitSpan and the bound", mode, rec.Code, rec.Body.String())
		}
	}
	// The bound is the request's: two PDFs under it alone, over it together.
	half := testsupport.NumberedPDF(engine.MaxSplitParts/2 + 1)
	rec := post(t, "/forms/pdfengines/split", nil, file("files", "a.pdf", half), file("files", "b.pdf", half), field("splitMode", "intervals"), field("splitSpan", "1"))
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "splitSpan") {
		t.Errorf("two PDFs: %d %q, want a 400 naming splitSpan", rec.Code, rec.Body.String())
	}
}

// TestPageRoutes: rotate, optimize, flatten, embed and bookmarks answer
// as Gotenberg's, their refusals naming the field.
func TestPageRoutes(t *testing.T) {
	page1 := file("files", "page_1.pdf", testsupport.NumberedPDF(1))
	page2 := file("files", "page_2.pdf", testsupport.NumberedPDF(2))
	for _, tc := range []struct {
		route string
		parts []part
		code  int
		want  string // in the body (an error), or the answer's file names
	}{
		{"rotate", []part{page1, field("rotateAngle", "90")}, 200, "page_1.pdf"},
		{"rotate", []part{page1, page2, field("rotateAngle", "270"), field("rotatePages", "1")}, 200, "page_1.pdf page_2.pdf"},
		{"rotate", []part{page1, field("rotateAngle", "45")}, 400, "Invalid form data: form field 'rotateAngle' is invalid (got '45', resulting to wrong value, expected 90, 180, or 270)"},
		{"rotate", []part{page1}, 400, "Invalid form data: form field 'rotateAngle' is required"},
		{"rotate", []part{field("rotateAngle", "90")}, 400, "Invalid form data: no form file found for extensions: [.pdf]"},
		{"rotate", []part{page1, field("rotateAngle", "90"), field("rotatePages", "x")}, 400, "form field 'rotatePages' is invalid"},
		{"optimize", []part{page1}, 200, "page_1.pdf"},
		{"optimize", []part{page1, field("imageQuality", "200")}, 400, "Invalid form data: form field 'imageQuality' is invalid (got '200', resulting to value is superior to 100)"},
		{"flatten", []part{page1, page2}, 200, "page_1.pdf page_2.pdf"},
		{"flatten", nil, 400, "Invalid form data: no form file found for extensions: [.pdf]"},
		{"embed", []part{page1, file("embeds", "a.xml", []byte("<a/>"))}, 200, "page_1.pdf"},
		{"embed", []part{page1, file("embeds", "a.xml", []byte("<a/>")), field("embedsMetadata", `{"a.xml":{"relationship":"Friend"}}`)}, 400, "form field 'embedsMetadata' is invalid"},
		{"bookmarks/write", nil, 400, "Invalid form data: form field 'bookmarks' is required\nno form file found for extensions: [.pdf]"},
		{"bookmarks/write", []part{page1, field("bookmarks", "foo")}, 400, "Invalid form data: form field 'bookmarks' is invalid (got 'foo', resulting to unmarshal bookmarks: invalid character 'o' in literal false (expecting 'a'))"},
		{"bookmarks/write", []part{page1, field("bookmarks", `[{"title":"x","page":9}]`)}, 400, "is for page 9, the document has 1"},
	} {
		t.Run(tc.route, func(t *testing.T) {
			rec := post(t, "/forms/pdfengines/"+tc.route, nil, tc.parts...)
			if rec.Code != tc.code {
				t.Fatalf("%d %q, want %d", rec.Code, rec.Body.String(), tc.code)
			}
			if tc.code != 200 {
				if !strings.Contains(rec.Body.String(), tc.want) {
					t.Errorf("body %q, want %q in it", rec.Body.String(), tc.want)
				}
				return
			}
			_, files := answer(t, rec)
			var names []string
			for n := range files {
				names = append(names, n)
			}
			slices.Sort(names)
			if strings.Join(names, " ") != tc.want {
				t.Errorf("files %v, want %s", names, tc.want)
			}
		})
	}
}

// TestBookmarksRoundTrip: an outline written by list and by file name
// reads back by file name; a PDF without one reads as [].
func TestBookmarksRoundTrip(t *testing.T) {
	doc := testsupport.NumberedPDF(2)
	rec := post(t, "/forms/pdfengines/bookmarks/read", nil, file("files", "plain.pdf", doc))
	if rec.Code != 200 || rec.Body.String() != `{"plain.pdf":[]}` {
		t.Fatalf("%d %s, want an empty list", rec.Code, rec.Body.String())
	}
	for _, bookmarks := range []string{
		`[{"title":"Index","page":1,"children":[{"title":"Sub-index","page":2}]}]`,
		`{"a.pdf":[{"title":"Index","page":1,"children":[{"title":"Sub-index","page":2}]}]}`,
	} {
		rec := post(t, "/forms/pdfengines/bookmarks/write", map[string]string{outputFilenameHeader: "foo"}, file("files", "a.pdf", doc), field("bookmarks", bookmarks))
		name, files := answer(t, rec)
		if rec.Code != 200 || name != "foo.pdf" {
			t.Fatalf("%d %s %q", rec.Code, name, rec.Body.String())
		}
		rec = post(t, "/forms/pdfengines/bookmarks/read", nil, file("files", "foo.pdf", files["foo.pdf"]))
		var got map[string][]engine.Bookmark
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || len(got["foo.pdf"]) != 1 || got["foo.pdf"][0].Children[0].Title != "Sub-index" {
			t.Errorf("read back %s %v", rec.Body.String(), err)
		}
	}
}

// TestOptimizeAndEmbedRoutes: optimize shrinks a PDF of large lossless
// images; embed attaches files and refuses an archive bomb naming embeds.
func TestOptimizeAndEmbedRoutes(t *testing.T) {
	var b testsupport.PDFBuilder
	img := b.Stream("/Type /XObject /Subtype /Image /Width 400 /Height 300 /ColorSpace /DeviceRGB /BitsPerComponent 8", testsupport.Photo(400, 300, 3), true)
	pages := b.Reserve()
	content := b.Stream("", []byte("q 400 0 0 300 0 0 cm /I Do Q"), false)
	page := b.Add("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /I %d 0 R >> >> /Contents %d 0 R >>", pages, img, content)
	b.Set(pages, "<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", page)
	doc := b.Bytes(b.Add("<< /Type /Catalog /Pages %d 0 R >>", pages))
	rec := post(t, "/forms/pdfengines/optimize", nil, file("files", "photo.pdf", doc), field("imageQuality", "40"))
	if rec.Code != 200 || rec.Body.Len() >= len(doc)/2 {
		t.Errorf("optimize: %d, %d bytes from %d: %.200s", rec.Code, rec.Body.Len(), len(doc), rec.Body.String())
	}

	rec = post(t, "/forms/pdfengines/embed", nil, file("files", "a.pdf", testsupport.NumberedPDF(1)),
		file("embeds", "one.xml", []byte("<one/>")), file("embeds", "two.xml", []byte("<two/>")))
	got, err := api.Attachments(bytes.NewReader(rec.Body.Bytes()), engine.Conf())
	if rec.Code != 200 || err != nil || len(got) != 2 {
		t.Errorf("embed: %d %v %v", rec.Code, got, err)
	}
	var bomb bytes.Buffer
	zw := zip.NewWriter(&bomb)
	w, _ := zw.CreateRaw(&zip.FileHeader{Name: "x", Method: zip.Deflate, CompressedSize64: 2, UncompressedSize64: 1 << 40})
	_, _ = w.Write([]byte{3, 0})
	_ = zw.Close()
	rec = post(t, "/forms/pdfengines/embed", nil, file("files", "a.pdf", testsupport.NumberedPDF(1)), file("embeds", "bomb.zip", bomb.Bytes()))
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "form field 'embeds' is invalid") {
		t.Errorf("bomb: %d %q", rec.Code, rec.Body.String())
	}
}

// TestConversionPageSteps: a conversion's fields become its steps, run on
// the rendered PDF named as the answer: split into <name>_<i>.pdf in a
// <name>.zip, every part turned, flattened and with the embeds.
func TestConversionPageSteps(t *testing.T) {
	f := &form{values: map[string]string{"splitMode": "intervals", "splitSpan": "2", "rotateAngle": "180",
		"optimizeImages": "true", "flatten": "true"}, embeds: []upload{{name: "data.xml", data: []byte("<d/>")}}}
	steps := postSteps(f)
	if err := f.err(); err != nil || len(steps) != 5 {
		t.Fatalf("%d steps, %v", len(steps), err)
	}
	if !slices.IsSortedFunc(steps, func(a, b postStep) int { return a.order - b.order }) {
		t.Error("steps out of Gotenberg's order")
	}
	h := New(Config{}).(*handler)
	pdf := testsupport.NumberedPDF(3)
	res, err := h.runSteps(t.Context(), result{body: io.NopCloser(bytes.NewReader(pdf)), size: int64(len(pdf))}, steps, "foo.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if res.fileName != "foo.zip" || res.contentType != "application/zip" {
		t.Errorf("answer %s %s", res.fileName, res.contentType)
	}
	body, _ := io.ReadAll(res.body)
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil || len(zr.File) != 2 || zr.File[0].Name != "foo_0.pdf" || zr.File[1].Name != "foo_1.pdf" {
		t.Fatalf("zip %v %v", zr, err)
	}
	rc, _ := zr.File[0].Open()
	part, _ := io.ReadAll(rc)
	if got, err := api.Attachments(bytes.NewReader(part), engine.Conf()); err != nil || len(got) != 1 {
		t.Errorf("the part's attachments: %v %v", got, err)
	}

	for _, bad := range []map[string]string{{"splitMode": "pages"}, {"rotateAngle": "1"}, {"imageQuality": "0"}, {"flatten": "maybe"}} {
		f := &form{values: bad}
		postSteps(f)
		if f.err() == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
