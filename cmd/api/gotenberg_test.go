package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// gotenbergEnv is bin/api and a real bin/worker (Chromium) on Redis and a
// storage folder, with a page server on ALLOWED_HOSTS, for the scenarios
// of Gotenberg's routes.
type gotenbergEnv struct {
	api, worker *harness.Proc
	base        string // bin/api's URL
	pages       string // the page server's URL
	token       string
	fetched     sync.Map // path -> *atomic.Int64
}

// page is the page server's HTML for a path: /pages/N is N pages, each
// "Page i"; /status/N answers N; anything else one page naming the path.
func pageHTML(path string) (int, string) {
	switch {
	case strings.HasPrefix(path, "/pages/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(path, "/pages/"))
		var b strings.Builder
		b.WriteString(`<!doctype html><title>Pages</title><style>section{break-after:page}</style>`)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "<section>Page %d</section>", i)
		}
		return 200, b.String()
	case strings.HasPrefix(path, "/status/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(path, "/status/"))
		return n, "<!doctype html><p>status page</p>"
	}
	return 200, `<!doctype html><title>One</title><p>Page 1 of ` + path + `</p>`
}

// startGotenbergEnv starts the binaries; apiEnv is more of bin/api's
// environment.
func startGotenbergEnv(t *testing.T, apiEnv ...string) *gotenbergEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := testsupport.Binaries(t)
	redis := testsupport.StartRedis(t)
	e := &gotenbergEnv{token: "gotenberg-test-token"}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := e.fetched.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		code, body := pageHTML(r.URL.Path)
		if strings.HasSuffix(r.URL.Path, ".png") {
			code, body = http.StatusNotFound, "no such image"
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(page.Close)
	e.pages = page.URL
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	common := []string{"REDIS_URL=" + redis.URL(), "STORAGE_URL=file://" + filepath.Join(dir, "artifacts"),
		"ALLOWED_HOSTS=" + strings.TrimPrefix(page.URL, "http://"), "LOG_FORMAT=text"}
	var err error
	e.worker, err = harness.Start("worker", "", filepath.Join(bin, "worker"), append(append(os.Environ(), common...),
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ADMIN_ADDR="+admin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.worker.Kill)
	e.api, err = harness.Start("api", "", filepath.Join(bin, "api"), append(append(common, "API_ADDR="+addr, "API_TOKEN="+e.token), apiEnv...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.api.Kill)
	e.base = "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, u := range []string{"http://" + admin + "/readyz", e.base + "/healthz"} {
		if err := harness.WaitHTTP(ctx, u, nil); err != nil {
			t.Fatalf("%v\nworker:\n%s\napi:\n%s", err, e.worker.Output(), e.api.Output())
		}
	}
	return e
}

func (e *gotenbergEnv) fetches(path string) int64 {
	n, ok := e.fetched.Load(path)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}

// renders counts the renders in the worker's log.
func (e *gotenbergEnv) renders() int { return strings.Count(e.worker.Output(), "outcome=rendered") }

// formPart is a field (file false) or a file of a multipart form.
type formPart struct {
	name, value string
	file        bool
}

func field(name, value string) formPart { return formPart{name: name, value: value} }
func file(name, body string) formPart   { return formPart{name: name, value: body, file: true} }

type answer struct {
	code   int
	header http.Header
	body   []byte
}

// post sends a multipart form as Gotenberg's clients do (files under the
// field "files"), with the bearer token unless the headers say otherwise.
func (e *gotenbergEnv) post(t *testing.T, path string, header map[string]string, parts ...formPart) answer {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		if p.file {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="files"; filename=%q`, p.name))
			h.Set("Content-Type", "application/octet-stream")
			w, _ := mw.CreatePart(h)
			_, _ = io.WriteString(w, p.value)
		} else {
			_ = mw.WriteField(p.name, p.value)
		}
	}
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, e.base+path, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+e.token)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{code: resp.StatusCode, header: resp.Header, body: body}
}

// pdf checks a is a PDF and returns its pages, text and page size.
func (e *gotenbergEnv) pdf(t *testing.T, a answer) (pages int, text, size string) {
	t.Helper()
	if a.code != http.StatusOK || a.header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(a.body, []byte("%PDF-")) {
		t.Fatalf("want a PDF, got %d %s: %.300s\napi:\n%s\nworker:\n%s", a.code, a.header.Get("Content-Type"), a.body, e.api.Tail(20), e.worker.Tail(20))
	}
	path := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(path, a.body, 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := harness.PDFInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	pages, _ = strconv.Atoi(info["Pages"])
	return pages, testsupport.PDFText(t, a.body), info["Page size"]
}

// refused checks a is Gotenberg's plain-text refusal with the status,
// whose message holds every want.
func refused(t *testing.T, a answer, code int, want ...string) {
	t.Helper()
	if a.code != code || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("want %d text/plain, got %d %s: %.500s", code, a.code, a.header.Get("Content-Type"), a.body)
	}
	for _, w := range want {
		if !bytes.Contains(a.body, []byte(w)) {
			t.Errorf("the message lacks %q:\n%s", w, a.body)
		}
	}
}

func pngOf(t *testing.T) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 20))
	for x := range 40 {
		for y := range 20 {
			img.Set(x, y, color.RGBA{R: 200, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestBinaries_GotenbergRoutes: Gotenberg's Chromium and PDF-engine routes
// on bin/api, scenario by scenario after Gotenberg's own feature files,
// with a real worker and Chromium behind them.
func TestBinaries_GotenbergRoutes(t *testing.T) {
	hooks := make(chan hookCall, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		hooks <- hookCall{method: r.Method, path: r.URL.Path, header: r.Header, body: body}
	}))
	t.Cleanup(receiver.Close)
	e := startGotenbergEnv(t, "CALLBACK_ALLOWED_HOSTS="+strings.TrimPrefix(receiver.URL, "http://"))
	const url = "/forms/chromium/convert/url"
	const html = "/forms/chromium/convert/html"

	t.Run("health and version", func(t *testing.T) {
		resp, err := http.Get(e.base + "/health")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !bytes.Contains(body, []byte(`"status":"up"`)) {
			t.Errorf("/health: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		req, _ := http.NewRequest(http.MethodGet, e.base+"/version", nil)
		req.Header.Set("Gotenberg-Trace", "version-trace")
		if a := do(t, req); a.code != http.StatusUnauthorized {
			t.Errorf("/version without credentials: %d, want 401", a.code)
		}
		req.SetBasicAuth("any", e.token) // Gotenberg's scheme: the password is the token
		a := do(t, req)
		if a.code != 200 || len(a.body) == 0 || a.header.Get("Gotenberg-Trace") != "version-trace" {
			t.Errorf("/version: %d %q trace %q", a.code, a.body, a.header.Get("Gotenberg-Trace"))
		}
	})

	t.Run("url default", func(t *testing.T) {
		a := e.post(t, url, map[string]string{"Gotenberg-Output-Filename": "foo", "Gotenberg-Trace": "url-default"}, field("url", e.pages+"/one"))
		pages, text, size := e.pdf(t, a)
		if pages != 1 || !strings.Contains(text, "Page 1") || !strings.HasPrefix(size, "612 x 792") {
			t.Errorf("pages %d, size %q, text %q", pages, size, text)
		}
		if cd := a.header.Get("Content-Disposition"); !strings.Contains(cd, `filename=foo.pdf`) {
			t.Errorf("Content-Disposition %q", cd)
		}
		if tr := a.header.Get("Gotenberg-Trace"); tr != "url-default" {
			t.Errorf("Gotenberg-Trace %q", tr)
		}
		if !strings.Contains(e.worker.Output(), "url-default") {
			t.Errorf("the trace is not the export's request id in the worker's log")
		}
	})

	t.Run("url without credentials is 401", func(t *testing.T) {
		a := e.post(t, url, map[string]string{"Authorization": ""}, field("url", e.pages+"/one"))
		if a.code != http.StatusUnauthorized {
			t.Errorf("%d, want 401", a.code)
		}
	})

	t.Run("url landscape, A4 in mm, page ranges", func(t *testing.T) {
		_, _, size := e.pdf(t, e.post(t, url, nil, field("url", e.pages+"/one"), field("landscape", "true")))
		if !strings.HasPrefix(size, "792 x 612") {
			t.Errorf("landscape page size %q", size)
		}
		_, _, size = e.pdf(t, e.post(t, url, nil, field("url", e.pages+"/one"), field("paperWidth", "210mm"), field("paperHeight", "297mm")))
		if !strings.HasPrefix(size, "595") {
			t.Errorf("A4 page size %q", size)
		}
		pages, text, _ := e.pdf(t, e.post(t, url, nil, field("url", e.pages+"/pages/12"), field("nativePageRanges", "2-3")))
		if pages != 2 || !strings.Contains(text, "Page 2") || strings.Contains(text, "Page 1\n") {
			t.Errorf("page ranges 2-3: %d pages, %q", pages, text)
		}
	})

	t.Run("url renders fresh unless reuse is asked for", func(t *testing.T) {
		before := e.fetches("/fresh")
		for range 2 {
			e.pdf(t, e.post(t, url, nil, field("url", e.pages+"/fresh")))
		}
		if n := e.fetches("/fresh") - before; n != 2 {
			t.Errorf("two plain URL conversions fetched the page %d times, want 2", n)
		}
		before = e.fetches("/fresh")
		for range 3 {
			e.pdf(t, e.post(t, url, map[string]string{"Pdfexport-Reuse-Version": "r1"}, field("url", e.pages+"/fresh")))
		}
		if n := e.fetches("/fresh") - before; n != 1 {
			t.Errorf("three conversions of version r1 fetched the page %d times, want 1", n)
		}
		e.pdf(t, e.post(t, url, map[string]string{"Pdfexport-Reuse-Max-Age": "600"}, field("url", e.pages+"/fresh")))
		e.pdf(t, e.post(t, url, map[string]string{"Pdfexport-Reuse-Max-Age": "10m"}, field("url", e.pages+"/fresh")))
		if n := e.fetches("/fresh") - before; n > 3 {
			t.Errorf("max-age conversions fetched the page %d times", n)
		}
		refused(t, e.post(t, url, map[string]string{"Pdfexport-Reuse-Max-Age": "soon"}, field("url", e.pages+"/fresh")), 400, "Pdfexport-Reuse-Max-Age")
	})

	t.Run("url main page 404 is 409", func(t *testing.T) {
		refused(t, e.post(t, url, nil, field("url", e.pages+"/status/404")), http.StatusConflict, "404")
	})

	t.Run("url off the allowlist", func(t *testing.T) {
		refused(t, e.post(t, url, nil, field("url", "http://127.0.0.1:1/secret")), 400, "form field 'url'")
	})

	t.Run("html default and answered from storage", func(t *testing.T) {
		doc := file("index.html", `<!doctype html><title>T</title><p>Hello from an uploaded file</p>`)
		a := e.post(t, html, map[string]string{"Gotenberg-Output-Filename": "bar"}, doc)
		pages, text, _ := e.pdf(t, a)
		if pages != 1 || !strings.Contains(text, "Hello from an uploaded file") {
			t.Errorf("%d pages, %q", pages, text)
		}
		renders := e.renders()
		again := e.post(t, html, nil, doc)
		e.pdf(t, again)
		if !bytes.Equal(a.body, again.body) || e.renders() != renders {
			t.Errorf("the repeat: same bytes %v, renders %d -> %d", bytes.Equal(a.body, again.body), renders, e.renders())
		}
		if !strings.Contains(e.api.Output(), "gotenberg: answered from storage") {
			t.Errorf("the repeat was not answered from storage:\n%s", e.api.Tail(10))
		}
	})

	t.Run("html with assets", func(t *testing.T) {
		a := e.post(t, html, nil,
			file("index.html", `<!doctype html><link rel="stylesheet" href="style.css"><h1>Assets</h1><p class="gone">HIDDEN-TEXT</p><img src="./logo.png" alt="">`),
			file("style.css", `@import "more.css"; .gone{display:none} body{background:url(logo.png)}`),
			file("more.css", `h1::after{content:" FROM-IMPORTED-CSS"}`),
			file("logo.png", pngOf(t)))
		_, text, _ := e.pdf(t, a)
		if !strings.Contains(text, "FROM-IMPORTED-CSS") || strings.Contains(text, "HIDDEN-TEXT") {
			t.Errorf("the stylesheets did not apply: %q", text)
		}
		path := filepath.Join(t.TempDir(), "a.pdf")
		_ = os.WriteFile(path, a.body, 0o600)
		if images := pdfImages(t, path); images < 1 {
			t.Errorf("%d images in the PDF, want the logo", images)
		}
	})

	t.Run("html with header and footer", func(t *testing.T) {
		a := e.post(t, html, nil,
			file("index.html", `<!doctype html><title>Heads</title><style>section{break-after:page}</style><section>One</section><section>Two</section>`),
			file("header.html", `<html><body><p style="font-size:9px">HEADER <span class="title"></span></p></body></html>`),
			file("footer.html", `<html><body><p style="font-size:9px">FOOT <span class="pageNumber"></span> of <span class="totalPages"></span></p></body></html>`),
			field("marginTop", "1in"), field("marginBottom", "1in"))
		pages, text, _ := e.pdf(t, a)
		if pages != 2 || !strings.Contains(text, "FOOT 2 of 2") || !strings.Contains(text, "HEADER Heads") {
			t.Errorf("%d pages, %q", pages, text)
		}
	})

	t.Run("markdown", func(t *testing.T) {
		a := e.post(t, "/forms/chromium/convert/markdown", nil,
			file("index.html", `<!doctype html><body>{{ toHTML "doc.md" }}</body>`),
			file("doc.md", "# Markdown title\n\n| a | b |\n|---|---|\n| cell-one | cell-two |\n"))
		_, text, _ := e.pdf(t, a)
		if !strings.Contains(text, "Markdown title") || !strings.Contains(text, "cell-two") {
			t.Errorf("%q", text)
		}
		refused(t, e.post(t, "/forms/chromium/convert/markdown", nil, file("index.html", `{{ range 1000000000 }}x{{ end }}`)), 400, "toHTML")
	})

	t.Run("bad request names every field", func(t *testing.T) {
		var parts []formPart
		for _, k := range []string{"singlePage", "paperWidth", "marginTop", "preferCssPageSize", "printBackground", "landscape", "scale", "waitDelay", "emulatedMediaType", "failOnHttpStatusCodes", "failOnConsoleExceptions"} {
			parts = append(parts, field(k, "foo"))
		}
		// In Gotenberg's order: its browser fields, then its print fields.
		refused(t, e.post(t, html, nil, parts...), 400, "Invalid form data: form field 'failOnHttpStatusCodes' is invalid (got 'foo'",
			"form field 'singlePage' is invalid", "form field 'paperWidth' is invalid", "form field 'scale' is invalid", "form field 'waitDelay' is invalid",
			"form field 'emulatedMediaType' is invalid", "form field 'failOnHttpStatusCodes' is invalid", "form file 'index.html' is required")
		doc := file("index.html", "<p>x</p>")
		refused(t, e.post(t, html, nil, doc, field("omitBackground", "true")), 400, "omitBackground requires printBackground set to true")
		refused(t, e.post(t, html, nil, doc, field("nativePageRanges", "foo")), 400, "nativePageRanges")
		refused(t, e.post(t, html, nil, doc, field("nativePageRanges", "2-3")), 400, "page_ranges")
		refused(t, e.post(t, html, nil, doc, field("cookies", `[{"name":"yummy_cookie","value":"choco"}]`)), 400, "cookie 0 must have its name, value and domain set")
		refused(t, e.post(t, html, nil, doc, field("scale", "9")), 400, "form field 'scale' is invalid")
	})

	t.Run("unsupported values are named", func(t *testing.T) {
		doc := file("index.html", "<p>x</p>")
		refused(t, e.post(t, html, nil, doc, field("pdfa", "PDF/A-9z")), 400, "The requested PDF format is not supported")
		refused(t, e.post(t, html, nil, doc, field("splitMode", "pages")), 400, "form field 'splitSpan' is required")
		refused(t, e.post(t, url, nil, field("url", "file:///etc/passwd")), 400, "file:// URLs are not accepted on this route")
		refused(t, e.post(t, "/forms/pdfengines/convert", nil, file("a.pdf", "%PDF-1.7")), 400, "either 'pdfa' or 'pdfua' form fields must be provided")
	})

	t.Run("fields reach the PDF", func(t *testing.T) {
		pages, text, _ := e.pdf(t, e.post(t, html, nil, file("index.html", `<p id="t">waiting</p><script>setTimeout(()=>{document.getElementById('t').textContent='READY-NOW';window.ready=true},300)</script>`),
			field("waitForExpression", "window.ready === true")))
		if pages != 1 || !strings.Contains(text, "READY-NOW") {
			t.Errorf("waitForExpression: %q", text)
		}
		_, text, _ = e.pdf(t, e.post(t, html, nil, file("index.html", `<p id="t">waiting</p><script>setTimeout(()=>{document.getElementById('t').textContent='DELAYED-TEXT'},400)</script>`),
			field("waitDelay", "1s")))
		if !strings.Contains(text, "DELAYED-TEXT") {
			t.Errorf("waitDelay: %q", text)
		}
		_, text, _ = e.pdf(t, e.post(t, html, nil, file("index.html", `<style>@media screen{.m::after{content:"SCREEN-MEDIA"}}</style><p class="m">m</p>`),
			field("emulatedMediaType", "screen")))
		if !strings.Contains(text, "SCREEN-MEDIA") {
			t.Errorf("emulatedMediaType screen: %q", text)
		}
		_, text, _ = e.pdf(t, e.post(t, html, nil, file("index.html", `<p>marked</p>`), field("watermarkSource", "text"), field("watermarkExpression", "WATERMARK-DRAFT")))
		if !strings.Contains(strings.Join(strings.Fields(text), ""), "WATERMARK-DRAFT") { // drawn at 45°: a letter a line
			t.Errorf("watermark: %q", text)
		}
		a := e.post(t, html, nil, file("index.html", `<title>x</title><p>meta</p>`), field("metadata", `{"Title":"Gotenberg Title","Author":"Ann"}`),
			field("userPassword", "open-sesame"))
		if a.code != 200 {
			t.Fatalf("metadata and userPassword: %d %s", a.code, a.body)
		}
		path := filepath.Join(t.TempDir(), "m.pdf")
		_ = os.WriteFile(path, a.body, 0o600)
		if out, _ := execOut("qpdf", "--show-encryption", "--password=open-sesame", path); !strings.Contains(out, "AESv3") && !strings.Contains(out, "AES") {
			t.Errorf("not AES-encrypted: %s", out)
		}
	})

	t.Run("failOn fields", func(t *testing.T) {
		doc := file("index.html", `<p>img</p><img src="`+e.pages+`/missing.png">`)
		refused(t, e.post(t, html, nil, doc, field("failOnResourceHttpStatusCodes", "[499,599]")), http.StatusConflict)
		e.pdf(t, e.post(t, html, nil, doc))
		refused(t, e.post(t, html, nil, file("index.html", `<p>c</p><script>throw new Error("boom")</script>`), field("failOnConsoleExceptions", "true")), http.StatusConflict)
	})

	t.Run("hostile input", func(t *testing.T) {
		big := strings.Repeat("x", 2<<20)
		refused(t, e.post(t, html, nil, file("index.html", `<img src="big.bin">`), file("big.bin", big[:1600<<10])), http.StatusRequestEntityTooLarge, "2 MiB")
		refused(t, e.post(t, html, nil, file("index.html", big+big)), http.StatusRequestEntityTooLarge, "larger than")
		var many []formPart
		for i := range 300 {
			many = append(many, field("f"+strconv.Itoa(i), "1"))
		}
		refused(t, e.post(t, html, nil, many...), http.StatusRequestEntityTooLarge, "more than 256")
		refused(t, e.post(t, html, nil, file("index.html", "<p>a</p>"), file("index.html", "<p>b</p>")), 400, "sent twice")
		// A path in a file name is only its base name: "../../index.html" is index.html.
		_, text, _ := e.pdf(t, e.post(t, html, nil, file(`..\..\index.html`, "<p>BASE-NAME-ONLY</p>")))
		if !strings.Contains(text, "BASE-NAME-ONLY") {
			t.Errorf("%q", text)
		}
		// A reference to a host off ALLOWED_HOSTS is blocked by the worker.
		refused(t, e.post(t, html, nil, file("index.html", `<img src="http://169.254.169.254/latest/meta-data">`), field("failOnResourceLoadingFailed", "true")), http.StatusConflict)
		refused(t, e.post(t, html, map[string]string{"Content-Type": "application/json"}), 400, "multipart/form-data")
	})

	t.Run("webhook", func(t *testing.T) {
		wait := func() hookCall {
			t.Helper()
			select {
			case c := <-hooks:
				return c
			case <-time.After(60 * time.Second):
				t.Fatalf("no webhook call\napi:\n%s", e.api.Tail(20))
				return hookCall{}
			}
		}
		hook := map[string]string{"Gotenberg-Webhook-Url": receiver.URL + "/hook", "Gotenberg-Webhook-Error-Url": receiver.URL + "/error",
			"Gotenberg-Webhook-Method": "PUT", "Gotenberg-Webhook-Extra-Http-Headers": `{"X-Foo":"bar","Content-Disposition":"inline"}`,
			"Gotenberg-Trace": "hook-trace"}
		a := e.post(t, html, hook, file("index.html", "<p>Delivered by webhook</p>"))
		if a.code != http.StatusNoContent {
			t.Fatalf("%d %s, want 204", a.code, a.body)
		}
		c := wait()
		if c.method != "PUT" || c.path != "/hook" || c.header.Get("Content-Type") != "application/pdf" || c.header.Get("X-Foo") != "bar" ||
			c.header.Get("Content-Disposition") != "inline" || c.header.Get("Gotenberg-Trace") != "hook-trace" {
			t.Errorf("webhook call %s %s %v", c.method, c.path, c.header)
		}
		if _, text, _ := e.pdf(t, answer{code: 200, header: http.Header{"Content-Type": {"application/pdf"}}, body: c.body}); !strings.Contains(text, "Delivered by webhook") {
			t.Errorf("webhook PDF text %q", text)
		}
		hook["Gotenberg-Webhook-Method"] = ""
		a = e.post(t, html, hook, file("index.html", `<script>throw new Error("x")</script>`), field("failOnConsoleExceptions", "true"))
		if a.code != http.StatusNoContent {
			t.Fatalf("%d %s, want 204", a.code, a.body)
		}
		c = wait()
		if c.method != "POST" || c.path != "/error" || !bytes.Contains(c.body, []byte(`"status":409`)) {
			t.Errorf("error call %s %s %s", c.method, c.path, c.body)
		}
		pdf := e.post(t, html, nil, file("index.html", "<p>to merge</p>"))
		e.pdf(t, pdf)
		if a = e.post(t, "/forms/pdfengines/merge", hook, file("a.pdf", string(pdf.body)), file("b.pdf", string(pdf.body))); a.code != http.StatusNoContent {
			t.Fatalf("merge: %d %s", a.code, a.body)
		}
		if c = wait(); c.path != "/hook" || !bytes.HasPrefix(c.body, []byte("%PDF-")) {
			t.Errorf("merge webhook %s %.40q", c.path, c.body)
		}
		refused(t, e.post(t, html, map[string]string{"Gotenberg-Webhook-Url": "http://169.254.169.254/hook", "Gotenberg-Webhook-Error-Url": receiver.URL + "/error"},
			file("index.html", "<p>x</p>")), 403, "Gotenberg-Webhook-Url", "CALLBACK_ALLOWED_HOSTS")
		refused(t, e.post(t, html, map[string]string{"Gotenberg-Webhook-Url": receiver.URL + "/hook"}, file("index.html", "<p>x</p>")), 400,
			"At least one of 'Gotenberg-Webhook-Error-Url' or 'Gotenberg-Webhook-Events-Url' headers must be provided")
		refused(t, e.post(t, html, map[string]string{"Gotenberg-Webhook-Url": receiver.URL + "/hook", "Gotenberg-Webhook-Error-Url": receiver.URL + "/error",
			"Gotenberg-Webhook-Method": "DELETE"}, file("index.html", "<p>x</p>")), 400, "Invalid 'Gotenberg-Webhook-Method' header value: expected 'POST', 'PATCH' or 'PUT', but got 'DELETE'")
		select {
		case c := <-hooks:
			t.Errorf("an unexpected webhook call: %s %s", c.method, c.path)
		case <-time.After(200 * time.Millisecond):
		}
	})

	t.Run("pdfengines merge, metadata, encrypt", func(t *testing.T) {
		one := e.post(t, html, nil, file("index.html", "<p>First document</p>"))
		e.pdf(t, one)
		two := e.post(t, url, nil, field("url", e.pages+"/pages/3"))
		e.pdf(t, two)
		merged := e.post(t, "/forms/pdfengines/merge", map[string]string{"Gotenberg-Output-Filename": "merged"},
			file("b.pdf", string(two.body)), file("a.pdf", string(one.body)), field("metadata", `{"Title":"Merged Title"}`))
		pages, text, _ := e.pdf(t, merged)
		if pages != 4 || strings.Index(text, "First document") > strings.Index(text, "Page 1") {
			t.Errorf("merged: %d pages, in name order? %q", pages, text)
		}
		read := e.post(t, "/forms/pdfengines/metadata/read", nil, file("merged.pdf", string(merged.body)))
		if read.code != 200 || !bytes.Contains(read.body, []byte(`"Title":"Merged Title"`)) {
			t.Errorf("metadata/read: %d %s", read.code, read.body)
		}
		written := e.post(t, "/forms/pdfengines/metadata/write", nil, file("a.pdf", string(one.body)), field("metadata", `{"Author":"Writer","Keywords":["k1","k2"]}`))
		e.pdf(t, written)
		read = e.post(t, "/forms/pdfengines/metadata/read", nil, file("a.pdf", string(written.body)))
		if !bytes.Contains(read.body, []byte(`"Author":"Writer"`)) {
			t.Errorf("metadata/write then read: %s", read.body)
		}
		refused(t, e.post(t, "/forms/pdfengines/metadata/write", nil, file("a.pdf", string(one.body)), field("metadata", "{\"Bad\\nKey\":\"x\"}")), 400, "Refused keys: 'BadKey'")
		enc := e.post(t, "/forms/pdfengines/encrypt", nil, file("a.pdf", string(one.body)), field("userPassword", "u-pass"), field("ownerPassword", "o-pass"))
		path := filepath.Join(t.TempDir(), "e.pdf")
		_ = os.WriteFile(path, enc.body, 0o600)
		if out, _ := execOut("qpdf", "--show-encryption", "--password=u-pass", path); !strings.Contains(out, "AES") {
			t.Errorf("encrypt: %d %s", enc.code, out)
		}
		refused(t, e.post(t, "/forms/pdfengines/encrypt", nil, file("a.pdf", string(one.body))), 400, "userPassword")
		refused(t, e.post(t, "/forms/pdfengines/merge", nil, file("a.pdf", "not a pdf")), 400, "a.pdf")
		refused(t, e.post(t, "/forms/pdfengines/merge", nil, field("x", "y")), 400, ".pdf")
		both := e.post(t, "/forms/pdfengines/encrypt", nil, file("a.pdf", string(one.body)), file("b.pdf", string(two.body)), field("userPassword", "u"))
		if both.code != 200 || both.header.Get("Content-Type") != "application/zip" {
			t.Errorf("two PDFs: %d %s", both.code, both.header.Get("Content-Type"))
		}
	})
}

// hookCall is a request the webhook receiver got.
type hookCall struct {
	method, path string
	header       http.Header
	body         []byte
}

func pdfImages(t *testing.T, path string) int {
	t.Helper()
	out, err := execOut("pdfimages", "-list", path)
	if err != nil {
		t.Fatalf("pdfimages: %v %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return len(lines) - 2 // two header lines
}

func execOut(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// nodeModules installs the pinned Node tools (scripts/install-node-tools.sh,
// a no-op when var/node-tools matches the lockfile) and returns their
// node_modules.
func nodeModules(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(root, "scripts", "install-node-tools.sh")).CombinedOutput(); err != nil {
		t.Fatalf("scripts/install-node-tools.sh (run by make setup): %v\n%s", err, out)
	}
	return filepath.Join(root, "var", "node-tools", "node_modules")
}

// TestBinaries_GotenbergClients: chromiumly and gotenberg-js-client (npm,
// pinned) convert a URL, an HTML file with assets and a footer, and merge
// the PDFs through bin/api; ten identical conversions at once through
// chromiumly are one render, and a repeat is answered from storage.
func TestBinaries_GotenbergClients(t *testing.T) {
	e := startGotenbergEnv(t)
	modules := nodeModules(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "logo.png"), []byte(pngOf(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) {
		t.Helper()
		cmd := exec.Command("node", "testdata/gotenberg-clients.cjs")
		cmd.Env = append(os.Environ(), append([]string{"NODE_PATH=" + modules, "PDFEXPORT_URL=" + e.base, "PDFEXPORT_TOKEN=" + e.token,
			"PAGE_URL=" + e.pages + "/pages/2", "OUT_DIR=" + dir}, extra...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("node: %v\n%s\napi:\n%s\nworker:\n%s", err, out, e.api.Tail(30), e.worker.Tail(30))
		}
	}
	renders := e.renders()
	run()
	read := func(name string) answer {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return answer{code: 200, header: http.Header{"Content-Type": {"application/pdf"}}, body: b}
	}
	for _, tc := range []struct {
		file, size string
		pages      int
		want, not  []string
	}{
		{"chromiumly-url.pdf", "792 x 612", 2, []string{"Page 1", "Page 2"}, nil},
		{"chromiumly-html.pdf", "612 x 792", 1, []string{"Chromiumly assets STYLED", "page 1"}, []string{"HIDDEN"}},
		{"chromiumly-merged.pdf", "", 3, []string{"Page 2", "STYLED"}, nil},
		{"gjs-html.pdf", "", 1, []string{"gotenberg-js-client", "WITH-CSS"}, nil},
		{"gjs-url.pdf", "", 2, []string{"Page 2"}, []string{"unused"}},
		{"gjs-merged.pdf", "", 3, []string{"WITH-CSS", "Page 2"}, nil},
	} {
		pages, text, size := e.pdf(t, read(tc.file))
		if pages != tc.pages || !strings.HasPrefix(size, tc.size) {
			t.Errorf("%s: %d pages of %s, want %d of %s", tc.file, pages, size, tc.pages, tc.size)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q: %q", tc.file, w, text)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(text, n) {
				t.Errorf("%s holds %q", tc.file, n)
			}
		}
		if imgs := pdfImages(t, filepath.Join(dir, tc.file)); strings.Contains(tc.file, "html") && imgs < 1 {
			t.Errorf("%s: no image", tc.file)
		}
	}
	gate := read("gate-0.pdf").body
	for i := range 10 {
		if b := read("gate-" + strconv.Itoa(i) + ".pdf").body; !bytes.Equal(b, gate) {
			t.Errorf("gate-%d.pdf differs from gate-0.pdf", i)
		}
	}
	// chromiumly's URL conversion, its HTML one and the ten identical ones,
	// gotenberg-js-client's HTML and URL ones: six renders, the ten one.
	if n := e.renders() - renders; n != 5 {
		t.Errorf("%d renders, want 5 (the ten identical conversions one)\n%s", n, e.worker.Tail(40))
	}
	stored := strings.Count(e.api.Output(), "gotenberg: answered from storage")
	renders = e.renders()
	run("GATE_ONLY=1")
	if e.renders() != renders+1 { // the URL conversion renders afresh; the HTML ones are stored
		t.Errorf("the repeat rendered %d times, want 1 (the URL)", e.renders()-renders)
	}
	if n := strings.Count(e.api.Output(), "gotenberg: answered from storage") - stored; n < 11 {
		t.Errorf("%d conversions of the repeat answered from storage, want the HTML one and the ten", n)
	}
}
