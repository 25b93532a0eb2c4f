package gotenberg

import (
	"bytes"
	"errors"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// FuzzReadForm feeds the form parser whatever a hostile caller can send
// as a body under a multipart Content-Type: it must answer a 4xx or a
// form within its limits whose file names are base names, never panic.
//
//	go test ./internal/gotenberg -run '^$' -fuzz FuzzReadForm -fuzztime 1m
func FuzzReadForm(f *testing.F) {
	seed := func(build func(mw *multipart.Writer)) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		_ = mw.SetBoundary("fuzzboundary")
		build(mw)
		_ = mw.Close()
		f.Add("fuzzboundary", b.Bytes())
	}
	seed(func(mw *multipart.Writer) {
		_ = mw.WriteField("paperWidth", "8.5")
		w, _ := mw.CreateFormFile("files", "index.html")
		_, _ = w.Write([]byte("<p>hi</p>"))
	})
	seed(func(mw *multipart.Writer) {
		w, _ := mw.CreateFormFile("files", "../../etc/passwd")
		_, _ = w.Write([]byte("x"))
		w, _ = mw.CreateFormFile("files", "a\\b\x00.pdf")
		_, _ = w.Write([]byte("y"))
	})
	seed(func(mw *multipart.Writer) {
		for range 20 {
			_ = mw.WriteField("k", strings.Repeat("v", 300))
		}
	})
	f.Add("b", []byte("--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"..\"\r\n\r\nx\r\n--b--\r\n"))
	f.Add("b", []byte("--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n"))
	lim := limits{bytes: 4 << 10, parts: 8, valueBytes: 256}
	f.Fuzz(func(t *testing.T, boundary string, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/forms/chromium/convert/html", bytes.NewReader(body))
		r.Header.Set("Content-Type", "multipart/form-data; boundary=\""+strings.ReplaceAll(boundary, `"`, "")+"\"")
		form, err := readForm(httptest.NewRecorder(), r, lim)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.status < 400 || he.status > 499 {
				t.Fatalf("refusal %T %v is not a 4xx answer", err, err)
			}
			if !strings.HasPrefix(he.msg, "Invalid form data") {
				t.Fatalf("refusal %q does not say what is invalid", he.msg)
			}
			return
		}
		if n := len(form.values) + len(form.files); n > lim.parts {
			t.Fatalf("%d parts read, limit %d", n, lim.parts)
		}
		total := 0
		for k, v := range form.values {
			total += len(k) + len(v)
			if len(v) > lim.valueBytes {
				t.Fatalf("field %q holds %d bytes, limit %d", k, len(v), lim.valueBytes)
			}
		}
		for _, u := range form.files {
			total += len(u.data)
			if u.name == "" || u.name == "." || u.name == ".." || strings.ContainsAny(u.name, `/\`) || len(u.name) > maxNameBytes {
				t.Fatalf("file name %q is not a base name", u.name)
			}
			if strings.IndexFunc(u.name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
				t.Fatalf("file name %q holds a control character", u.name)
			}
		}
		if int64(total) > lim.bytes {
			t.Fatalf("%d bytes read from a body limited to %d", total, lim.bytes)
		}
	})
}
