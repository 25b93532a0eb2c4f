package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// newRenderer starts a Renderer of the test's own on the test machine's
// Chromium, closed (and checked for leftover processes) at the end of the
// test. Tests that need only a default Renderer use sharedRenderer
// (main_test.go says which test gets which).
func newRenderer(t *testing.T, cfg Config, setup ...func(*Renderer)) *Renderer {
	t.Helper()
	if cfg.ChromiumPath == "" {
		cfg.ChromiumPath = testsupport.ChromiumPath(t)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(r)
	}
	register(r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		r.Close()
		unregister(r)
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		defer unregister(r)
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if pids := ourChromiums(r); len(pids) > 0 {
			t.Errorf("chromium processes left after Close: %v", pids)
		}
	})
	return r
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ourChromiums lists live chromium processes this test process started:
// members of the process group of any browser r started (other sessions on
// the machine run chromedp browsers too, so a match on the chromedp-runner
// data dir prefix would see theirs), and, while no other test Renderer is
// open (their browsers are children too), any direct child but the shared
// Renderer's browser. TestMain repeats the latter for the whole package.
func ourChromiums(r *Renderer) []string {
	var groups []int
	if r != nil {
		r.lock <- struct{}{}
		groups = append(groups, r.pids...)
		r.unlock()
	}
	var found []string
	for _, g := range groups {
		for _, pid := range chromiumPIDs(g, "") {
			found = append(found, fmt.Sprintf("%d (group %d)", pid, g))
		}
	}
	if !othersAlive(r) {
		found = append(found, chromiumChildren()...)
	}
	return found
}

// rendered is the outcome of one render in a test.
type rendered struct {
	pdf   []byte
	stats Stats
	err   error
}

func render(t *testing.T, r *Renderer, ctx context.Context, src Source, s spec.PrintSettings) rendered {
	t.Helper()
	var buf bytes.Buffer
	st, err := r.Render(ctx, src, s, func(_ context.Context, pdf io.Reader) error {
		_, err := io.Copy(&buf, pdf)
		return err
	})
	return rendered{pdf: buf.Bytes(), stats: st, err: err}
}

func mustRender(t *testing.T, r *Renderer, src Source, s spec.PrintSettings) rendered {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := render(t, r, ctx, src, s)
	if out.err != nil {
		t.Fatalf("Render: %v", out.err)
	}
	if !bytes.HasPrefix(out.pdf, []byte("%PDF-")) {
		t.Fatalf("output is not a PDF: %q", out.pdf[:min(len(out.pdf), 40)])
	}
	if out.stats.Bytes != int64(len(out.pdf)) {
		t.Errorf("Stats.Bytes = %d, sink got %d", out.stats.Bytes, len(out.pdf))
	}
	return out
}

// pdfInfo runs pdfinfo on a PDF and returns its fields (harness.PDFInfo).
func pdfInfo(t *testing.T, pdf []byte) map[string]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := harness.PDFInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func pdfText(t *testing.T, pdf []byte) string { t.Helper(); return testsupport.PDFText(t, pdf) }

func settings(o spec.Options) spec.PrintSettings { return o.Settings() }

// multiPageHTML is a document of n forced pages with headings.
func multiPageHTML(n int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><title>Manual</title><style>
		section { page-break-after: always; } section:last-child { page-break-after: auto; }
		body { font-family: sans-serif; }</style></head><body>`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "<section><h1>Chapter %d</h1><p>Body of chapter %d.</p></section>", i, i)
	}
	b.WriteString("</body></html>")
	return b.String()
}

func TestRender_HTMLPageCountMatchesPdfinfo(t *testing.T) {
	t.Parallel()
	r := sharedRenderer(t)
	big := multiPageHTML(3) + "<!--" + strings.Repeat("x", 2<<20-len(multiPageHTML(3))-16) + "-->"
	tests := []struct {
		name  string
		html  string
		opts  spec.Options
		pages int
	}{
		{"plain 7 pages", multiPageHTML(7), spec.Options{}, 7},
		{"tagged with outline 7 pages", multiPageHTML(7), spec.Options{Tagged: true, Outline: true}, 7},
		{"one page", "<!doctype html><p>hello</p>", spec.Options{}, 1},
		{"40 pages", multiPageHTML(40), spec.Options{}, 40},
		{"40 pages tagged", multiPageHTML(40), spec.Options{Tagged: true}, 40},
		{"page ranges", multiPageHTML(10), spec.Options{PageRanges: "2-4,7"}, 4},
		{"2 MiB of HTML", big, spec.Options{}, 3},
		{"header and footer", multiPageHTML(3), spec.Options{
			HeaderHTML: `<div style="font-size:8px">HEADER-MARK</div>`,
			FooterHTML: `<div style="font-size:8px">page <span class="pageNumber"></span></div>`,
		}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := mustRender(t, r, Source{HTML: tc.html}, settings(tc.opts))
			info := pdfInfo(t, out.pdf)
			if got := info["Pages"]; got != strconv.Itoa(tc.pages) {
				t.Errorf("pdfinfo Pages = %s, want %d", got, tc.pages)
			}
			if out.stats.Pages != tc.pages {
				t.Errorf("Stats.Pages = %d, want %d (pdfinfo %s)", out.stats.Pages, tc.pages, info["Pages"])
			}
			if n, err := CountPages(iotest.OneByteReader(bytes.NewReader(out.pdf))); err != nil || n != tc.pages {
				t.Errorf("CountPages = %d, %v; want %d", n, err, tc.pages)
			}
			if tc.opts.Tagged && info["Tagged"] != "yes" {
				t.Errorf("pdfinfo Tagged = %q, want yes", info["Tagged"])
			}
			if !tc.opts.Tagged && !tc.opts.Outline && info["Tagged"] != "no" {
				t.Errorf("pdfinfo Tagged = %q, want no (tagging is opt-in)", info["Tagged"])
			}
			if tc.opts.HeaderHTML != "" && !strings.Contains(pdfText(t, out.pdf), "HEADER-MARK") {
				t.Errorf("header template missing from the PDF text")
			}
			t.Logf("%d pages, %d bytes, %v", out.stats.Pages, out.stats.Bytes, out.stats.Duration)
		})
	}
}

// site is a local HTTP server that counts the requests of every path.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newSite(t *testing.T, h http.HandlerFunc) *site {
	t.Helper()
	s := &site{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s.mu.Lock()
		s.hits[req.URL.Path]++
		s.mu.Unlock()
		h(w, req)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) hostPort() string { return strings.TrimPrefix(s.URL, "http://") }

func (s *site) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.hits {
		n += v
	}
	return n
}

func (s *site) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// pngPixel is a 1x1 PNG.
var pngPixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

func TestRender_URLSourceAndRequestGuard(t *testing.T) {
	t.Parallel()
	forbidden := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>FORBIDDEN-CONTENT</p>")
	})
	allowed := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><title>ok</title><h1>ALLOWED-PAGE</h1><img src="/pixel.png">`)
		case "/pixel.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(pngPixel)
		case "/subrequests":
			w.Header().Set("Content-Type", "text/html")
			f := forbidden.URL
			fmt.Fprintf(w, `<!doctype html><h1>SUBREQUESTS</h1>
				<img src="%[1]s/img.png"><link rel="stylesheet" href="%[1]s/style.css">
				<iframe src="%[1]s/frame"></iframe><script src="%[1]s/script.js"></script>
				<img src="file:///etc/passwd"><iframe src="file:///etc/hostname"></iframe>
				<script>fetch("%[1]s/fetch").catch(() => {});
				  var x = new XMLHttpRequest(); x.open("GET", "%[1]s/xhr"); x.send();</script>`, f)
		case "/redirect":
			http.Redirect(w, req, forbidden.URL+"/landing", http.StatusFound)
		case "/js-redirect":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<p>leaving</p><script>location.href = %q</script>`, forbidden.URL+"/js")
		case "/missing":
			http.NotFound(w, req)
		case "/broken":
			http.Error(w, "boom", http.StatusBadGateway)
		default:
			http.NotFound(w, req)
		}
	})
	closedPort := testsupport.FreePort(t)
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(allowed.hostPort() + ",127.0.0.1:" + strconv.Itoa(closedPort))})

	tests := []struct {
		name      string
		url       string
		wantErr   error
		retryable bool
		wantText  string
		check     func(t *testing.T, err error)
	}{
		{name: "allowed page renders with its image", url: allowed.URL + "/page", wantText: "ALLOWED-PAGE",
			check: func(t *testing.T, _ error) {
				if allowed.count("/pixel.png") == 0 {
					t.Errorf("the allowed image was never requested")
				}
			}},
		{name: "sub-requests to a host off the allowlist never leave the browser", url: allowed.URL + "/subrequests", wantText: "SUBREQUESTS"},
		{name: "404 main document", url: allowed.URL + "/missing", wantErr: ErrHTTPStatus,
			check: func(t *testing.T, err error) {
				var se *StatusError
				if !errors.As(err, &se) || se.Code != 404 {
					t.Errorf("want a StatusError with code 404, got %v", err)
				}
			}},
		{name: "502 main document is retryable", url: allowed.URL + "/broken", wantErr: ErrHTTPStatus, retryable: true},
		{name: "host off the allowlist", url: forbidden.URL + "/page", wantErr: ErrBlocked},
		{name: "redirect to a host off the allowlist", url: allowed.URL + "/redirect", wantErr: ErrBlocked},
		{name: "script navigation to a host off the allowlist", url: allowed.URL + "/js-redirect", wantErr: ErrBlocked},
		{name: "file URL", url: "file:///etc/passwd", wantErr: ErrBlocked},
		{name: "loopback in another spelling", url: "http://2130706433:" + strings.Split(forbidden.hostPort(), ":")[1] + "/", wantErr: ErrBlocked},
		{name: "connection refused", url: "http://127.0.0.1:" + strconv.Itoa(closedPort) + "/", wantErr: ErrNavigation, retryable: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out := render(t, r, ctx, Source{URL: tc.url}, settings(spec.Options{}))
			if tc.wantErr == nil {
				if out.err != nil {
					t.Fatalf("Render: %v", out.err)
				}
				if text := pdfText(t, out.pdf); !strings.Contains(text, tc.wantText) {
					t.Errorf("PDF text lacks %q:\n%s", tc.wantText, text)
				}
			} else {
				if !errors.Is(out.err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", out.err, tc.wantErr)
				}
				if got := Retryable(out.err); got != tc.retryable {
					t.Errorf("Retryable(%v) = %v, want %v", out.err, got, tc.retryable)
				}
				t.Logf("err: %v", out.err)
			}
			if tc.check != nil {
				tc.check(t, out.err)
			}
			if n := forbidden.total(); n != 0 {
				t.Errorf("the server off the allowlist got %d requests: %v", n, forbidden.hits)
			}
		})
	}
}

// lateHTML adds LATE-TEXT and sets window.__PDF_READY__ after delay.
func lateHTML(delay time.Duration) string {
	return fmt.Sprintf(`<!doctype html><h1>EARLY-TEXT</h1><script>
		setTimeout(() => {
			const p = document.createElement("p"); p.textContent = "LATE-TEXT"; document.body.appendChild(p);
			window.__PDF_READY__ = true;
		}, %d);</script>`, delay.Milliseconds())
}

func TestRender_WaitForIsRespected(t *testing.T) {
	t.Parallel()
	r := sharedRenderer(t)
	html := lateHTML(1500 * time.Millisecond)

	without := mustRender(t, r, Source{HTML: html}, settings(spec.Options{}))
	if text := pdfText(t, without.pdf); strings.Contains(text, "LATE-TEXT") {
		t.Fatalf("without wait_for the late text is already there; the test proves nothing:\n%s", text)
	}
	with := mustRender(t, r, Source{HTML: html}, settings(spec.Options{WaitFor: "window.__PDF_READY__ === true"}))
	if text := pdfText(t, with.pdf); !strings.Contains(text, "LATE-TEXT") || !strings.Contains(text, "EARLY-TEXT") {
		t.Fatalf("with wait_for the late text is missing:\n%s", text)
	}
}

func TestRender_TimeoutThenNextRenderSucceeds(t *testing.T) {
	// Serial (no t.Parallel): its bounds on how soon a render times out are
	// real time, which a parallel neighbour's CPU would stretch.
	hang := make(chan struct{})
	slow := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-hang:
		case <-req.Context().Done():
		}
	})
	t.Cleanup(func() { close(hang) })
	r := newRenderer(t, Config{Timeout: 1500 * time.Millisecond, AllowedHosts: allowlist.MustParse(slow.hostPort())})

	tests := []struct {
		name     string
		src      Source
		opts     spec.Options
		ctxLimit time.Duration
		maxTook  time.Duration
	}{
		{"wait_for never true", Source{HTML: "<p>x</p>"}, spec.Options{WaitFor: "window.__never__"}, 0, 4 * time.Second},
		{"wait_for that throws", Source{HTML: "<p>x</p>"}, spec.Options{WaitFor: "undefinedVariable.x"}, 0, 4 * time.Second},
		{"server never answers", Source{URL: slow.URL + "/"}, spec.Options{}, 0, 4 * time.Second},
		{"caller deadline sooner than Timeout", Source{HTML: "<p>x</p>"}, spec.Options{WaitFor: "false"}, 500 * time.Millisecond, 1400 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.ctxLimit > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctxLimit)
				defer cancel()
			}
			start := time.Now()
			out := render(t, r, ctx, tc.src, settings(tc.opts))
			took := time.Since(start)
			if !errors.Is(out.err, ErrTimeout) || !Retryable(out.err) {
				t.Fatalf("err = %v, want retryable ErrTimeout", out.err)
			}
			if took > tc.maxTook {
				t.Errorf("took %v, want at most %v", took, tc.maxTook)
			}
			t.Logf("err after %v: %v", took, out.err)

			next := mustRender(t, r, Source{HTML: "<p>after the timeout</p>"}, settings(spec.Options{}))
			if next.stats.Pages != 1 {
				t.Errorf("next render: %d pages", next.stats.Pages)
			}
		})
	}
}

func TestRender_ConcurrencyLimitHonoured(t *testing.T) {
	t.Parallel()
	r := newRenderer(t, Config{Concurrency: 2})
	const renders = 4
	// Count the page targets Chromium itself reports while renders run.
	stop := make(chan struct{})
	var maxPages atomic.Int32
	var wgPoll sync.WaitGroup
	wgPoll.Go(func() {
		base := -1
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			n, err := r.pageTargets(context.Background())
			if err != nil {
				continue
			}
			if base < 0 {
				base = n // the browser's own first tab
			}
			if n-base > int(maxPages.Load()) {
				maxPages.Store(int32(n - base))
			}
		}
	})
	time.Sleep(100 * time.Millisecond)

	var wg sync.WaitGroup
	results := make([]rendered, renders)
	for i := range renders {
		wg.Go(func() {
			results[i] = render(t, r, context.Background(), Source{HTML: lateHTML(600 * time.Millisecond)},
				settings(spec.Options{WaitFor: "window.__PDF_READY__"}))
		})
	}
	wg.Wait()
	close(stop)
	wgPoll.Wait()

	queued := 0
	for i, res := range results {
		if res.err != nil {
			t.Fatalf("render %d: %v", i, res.err)
		}
		if res.stats.QueueWait > 300*time.Millisecond {
			queued++
		}
	}
	if got := r.maxTabs.Load(); got > 2 || got < 2 {
		t.Errorf("at most %d tabs were open at once, want exactly 2", got)
	}
	// Beside the 2 render tabs, Chromium lists the spare tab the next
	// render will take (spare.go).
	if got := maxPages.Load(); got > 3 {
		t.Errorf("Chromium reported %d render tabs at once, want at most 2 and the spare", got)
	}
	if queued < 2 {
		t.Errorf("%d renders waited for a tab, want at least 2", queued)
	}
	t.Logf("max tabs %d, max page targets seen %d, queued %d", r.maxTabs.Load(), maxPages.Load(), queued)
}

var pageSizeRE = regexp.MustCompile(`([\d.]+) x ([\d.]+) pts`)

func TestRender_PaperAndOrientation(t *testing.T) {
	t.Parallel()
	r := sharedRenderer(t)
	tests := []struct {
		name      string
		opts      spec.Options
		landscape bool
		wantW     float64 // points, of the sheet as printed
	}{
		{"A4 portrait", spec.Options{}, false, 8.27 * 72},
		{"A4 landscape", spec.Options{Landscape: true}, true, 11.69 * 72},
		{"Letter landscape", spec.Options{Paper: "Letter", Landscape: true}, true, 11 * 72},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := mustRender(t, r, Source{HTML: multiPageHTML(2)}, settings(tc.opts))
			m := pageSizeRE.FindStringSubmatch(pdfInfo(t, out.pdf)["Page size"])
			if m == nil {
				t.Fatalf("no page size in pdfinfo")
			}
			w, _ := strconv.ParseFloat(m[1], 64)
			h, _ := strconv.ParseFloat(m[2], 64)
			if (w > h) != tc.landscape {
				t.Errorf("page is %.1f x %.1f pt, landscape=%v", w, h, tc.landscape)
			}
			if d := w - tc.wantW; d > 2 || d < -2 {
				t.Errorf("width %.1f pt, want %.1f", w, tc.wantW)
			}
		})
	}
}

func TestRender_MediaEmulation(t *testing.T) {
	t.Parallel()
	r := sharedRenderer(t)
	html := `<style>@media print { .screen { display: none } } @media screen { .print { display: none } }</style>
		<p class="screen">SCREEN-ONLY</p><p class="print">PRINT-ONLY</p>`
	for media, want := range map[string]string{"print": "PRINT-ONLY", "screen": "SCREEN-ONLY"} {
		out := mustRender(t, r, Source{HTML: html}, settings(spec.Options{Media: media}))
		text := pdfText(t, out.pdf)
		if !strings.Contains(text, want) || strings.Count(text, "-ONLY") != 1 {
			t.Errorf("media %s: text %q, want only %s", media, strings.TrimSpace(text), want)
		}
	}
}

func TestRender_BrowserCrashFailsRenderAndNextRestarts(t *testing.T) {
	t.Parallel()
	// The kill must land in the wait_for polling, not while the tab is
	// still opening: on a loaded machine (or beside parallel tests) opening
	// it can take longer than any fixed sleep after the tab is counted.
	polling := make(chan struct{}, 1)
	r := newRenderer(t, Config{Timeout: 30 * time.Second}, func(r *Renderer) {
		r.hooks.mark = func(step string) {
			if step == "fonts" { // the last step before wait_for
				select {
				case polling <- struct{}{}:
				default:
				}
			}
		}
	})
	first := r.current()
	done := make(chan rendered, 1)
	go func() {
		done <- render(t, r, context.Background(), Source{HTML: "<p>waits forever</p>"}, settings(spec.Options{WaitFor: "window.__never__"}))
	}()
	select {
	case <-polling:
	case out := <-done:
		t.Fatalf("the render ended before its wait_for: %v", out.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the render did not reach its wait_for within 20 s")
	}
	testsupport.Eventually(t, 10*time.Second, func() error { return oneTab(r) })
	time.Sleep(500 * time.Millisecond) // well into the wait_for polling
	if err := syscall.Kill(first.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var out rendered
	select {
	case out = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("render did not return after the browser was killed")
	}
	if !errors.Is(out.err, ErrBrowserCrashed) || !Retryable(out.err) {
		t.Fatalf("err = %v, want retryable ErrBrowserCrashed", out.err)
	}
	t.Logf("err: %v", out.err)
	if err := r.Ping(context.Background()); !errors.Is(err, ErrBrowserCrashed) {
		t.Errorf("Ping after the crash = %v, want ErrBrowserCrashed", err)
	}

	next := mustRender(t, r, Source{HTML: "<p>after the crash</p>"}, settings(spec.Options{}))
	if next.stats.Pages != 1 {
		t.Errorf("next render: %d pages", next.stats.Pages)
	}
	if got := r.Restarts(); got != 1 {
		t.Errorf("Restarts = %d, want 1", got)
	}
	if r.current().pid == first.pid {
		t.Errorf("still the same browser pid %d", first.pid)
	}
	if err := r.Ping(context.Background()); err != nil {
		t.Errorf("Ping after the restart: %v", err)
	}
	testsupport.Eventually(t, 5*time.Second, func() error { return browserGone(first) })
}

func TestRender_RecyclesBrowserAfterMaxRenders(t *testing.T) {
	t.Parallel()
	obs := &countingObserver{results: map[string]int{}}
	r := newRenderer(t, Config{MaxRendersPerBrowser: 2, Observer: obs})
	first := r.current()
	for i := range 3 {
		mustRender(t, r, Source{HTML: fmt.Sprintf("<p>render %d</p>", i)}, settings(spec.Options{}))
	}
	obs.mu.Lock()
	if obs.restarts != 1 || obs.results["ok"] != 3 {
		t.Errorf("observer saw %d restarts and results %v, want 1 restart and 3 ok", obs.restarts, obs.results)
	}
	if len(obs.stats) != 3 || obs.stats[0].Pages != 1 || obs.stats[0].Bytes == 0 {
		t.Errorf("StatsObserver got %+v, want 3 renders of 1 page", obs.stats)
	}
	obs.mu.Unlock()
	if got := r.starts.Load(); got != 2 {
		t.Errorf("browsers started = %d, want 2", got)
	}
	if got := r.Restarts(); got != 0 {
		t.Errorf("Restarts = %d, want 0 (recycling is not a crash)", got)
	}
	testsupport.Eventually(t, 10*time.Second, func() error {
		if err := browserGone(first); err != nil {
			return err
		}
		_, err := os.Stat(first.dataDir)
		return testsupport.Unless(errors.Is(err, os.ErrNotExist), "the recycled browser's data dir %s is still there (%v)", first.dataDir, err)
	})
}

func TestRender_SinkErrors(t *testing.T) {
	t.Parallel()
	r := sharedRenderer(t)
	boom := errors.New("storage said no")
	tests := []struct {
		name string
		sink func(context.Context, io.Reader) error
		want error
	}{
		{"sink fails", func(_ context.Context, pdf io.Reader) error {
			io.CopyN(io.Discard, pdf, 100)
			return boom
		}, boom},
		{"sink stops reading early", func(_ context.Context, pdf io.Reader) error {
			_, err := io.CopyN(io.Discard, pdf, 10)
			return err
		}, ErrSink},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Render(context.Background(), Source{HTML: multiPageHTML(3)}, settings(spec.Options{}), tc.sink)
			if !errors.Is(err, ErrSink) || !errors.Is(err, tc.want) || Retryable(err) {
				t.Fatalf("err = %v, want non-retryable ErrSink wrapping %v", err, tc.want)
			}
			mustRender(t, r, Source{HTML: "<p>next</p>"}, settings(spec.Options{}))
		})
	}
}

func TestRenderer_CloseLeavesNothingBehind(t *testing.T) {
	// Serial (no t.Parallel): it counts the goroutines of the whole test
	// binary and its chromium children (main_test.go).
	before := runtime.NumGoroutine()
	cfg := Config{ChromiumPath: testsupport.ChromiumPath(t), Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Ping(context.Background()); err == nil {
		t.Errorf("Ping before Start succeeded")
	}
	// The first render starts the browser lazily.
	mustRender(t, r, Source{HTML: "<p>one</p>"}, settings(spec.Options{}))
	b := r.current()
	if err := r.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}

	// A render in flight when Close is called fails with ErrClosed.
	done := make(chan error, 1)
	go func() {
		_, err := r.Render(context.Background(), Source{HTML: "<p>x</p>"}, settings(spec.Options{WaitFor: "false"}),
			func(context.Context, io.Reader) error { return nil })
		done <- err
	}()
	testsupport.Eventually(t, 10*time.Second, func() error { return oneTab(r) })
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("render in flight during Close: %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	if pids := chromiumPIDs(b.pid, b.dataDir); len(pids) != 0 {
		t.Errorf("processes of the browser left: %v", pids)
	}
	if pids := ourChromiums(r); len(pids) != 0 {
		t.Errorf("chromium processes left: %v", pids)
	}
	if _, err := os.Stat(b.dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("user data dir %s still there: %v", b.dataDir, err)
	}
	if _, err := r.Render(context.Background(), Source{HTML: "<p>x</p>"}, settings(spec.Options{}),
		func(context.Context, io.Reader) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Render after Close: %v, want ErrClosed", err)
	}
	if err := r.Ping(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close: %v, want ErrClosed", err)
	}
	if err := r.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
	testsupport.Eventually(t, 5*time.Second, func() error {
		n := runtime.NumGoroutine()
		return testsupport.Unless(n <= before, "%d goroutines, %d before", n, before)
	})
}

func TestNew_RejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative concurrency", Config{Concurrency: -1}, "concurrency"},
		{"negative timeout", Config{Timeout: -time.Second}, "timeout"},
		{"missing binary", Config{ChromiumPath: "/nonexistent/chromium"}, "chromium path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.ChromiumPath == "" {
				tc.cfg.ChromiumPath = testsupport.ChromiumPath(t)
			}
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error about %s", err, tc.want)
			}
		})
	}
}

func TestPageCounter_CountsAcrossChunkBoundaries(t *testing.T) {
	doc := []byte("%PDF-1.7\n1 0 obj <</Type /Pages /Kids [2 0 R 3 0 R] /Count 3>> endobj\n" +
		"2 0 obj <</Type /Page /Parent 1 0 R>> endobj\n" +
		"3 0 obj <</Type/Page/Parent 1 0 R>> endobj\n" +
		"4 0 obj <</Type /PageLabel>> endobj 5 0 obj <</Type\n/Page\n>> endobj\n" +
		"6 0 obj <</Type /Catalog /Pages 1 0 R>> endobj\n<</Type /Page")
	const want = 4 // three objects plus the match ending the data
	for split := 0; split <= len(doc); split++ {
		var c pageCounter
		c.write(doc[:split])
		c.write(doc[split:])
		c.finish()
		if c.count() != want {
			t.Fatalf("split at %d: %d pages, want %d", split, c.count(), want)
		}
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var c pageCounter
		for rest := doc; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(40))
			c.write(rest[:n])
			rest = rest[n:]
		}
		c.finish()
		if c.count() != want {
			t.Fatalf("seed %d: %d pages, want %d", seed, c.count(), want)
		}
	}
}

func TestCountPages_RejectsNonPDF(t *testing.T) {
	if _, err := CountPages(strings.NewReader("<html>")); err == nil {
		t.Fatal("CountPages accepted HTML")
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", ErrTimeout), true},
		{fmt.Errorf("x: %w", ErrNavigation), true},
		{fmt.Errorf("x: %w", ErrBrowserCrashed), true},
		{fmt.Errorf("x: %w", ErrPrint), true},
		{permanent{fmt.Errorf("x: %w", ErrPrint)}, false},
		{&StatusError{Code: 404}, false},
		{&StatusError{Code: 429}, true},
		{&StatusError{Code: 503}, true},
		{fmt.Errorf("x: %w", ErrBlocked), false},
		{fmt.Errorf("%w: %w", ErrSink, errors.New("s3")), false},
		{context.Canceled, false},
		{nil, false},
	}
	for _, tc := range tests {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// oneTab is nil once r has one tab open.
func oneTab(r *Renderer) error {
	n := r.tabs.Load()
	return testsupport.Unless(n == 1, "%d tabs open, want 1", n)
}

// browserGone is nil once no process of b is left.
func browserGone(b *browser) error {
	pids := chromiumPIDs(b.pid, b.dataDir)
	return testsupport.Unless(len(pids) == 0, "processes of browser %d left: %v", b.pid, pids)
}

func TestRender_WaitsForSlowWebFont(t *testing.T) {
	t.Parallel()
	font, err := os.ReadFile("/usr/share/fonts/truetype/dejavu/DejaVuMathTeXGyre.ttf")
	if err != nil {
		t.Skipf("test font not installed: %v", err) // a missing font is not a missing dependency of the service
	}
	fonts := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		time.Sleep(time.Second)
		w.Header().Set("Content-Type", "font/ttf")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write(font)
	})
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(fonts.hostPort())})
	html := fmt.Sprintf(`<!doctype html><style>@font-face { font-family: Slow; src: url(%s/slow.ttf); }
		p { font-family: Slow, sans-serif; }</style><p>Typeset in the slow font</p>`, fonts.URL)
	out := mustRender(t, r, Source{HTML: html}, settings(spec.Options{}))
	path := filepath.Join(t.TempDir(), "out.pdf")
	os.WriteFile(path, out.pdf, 0o600)
	list, err := exec.Command("pdffonts", path).CombinedOutput()
	if err != nil {
		t.Fatalf("pdffonts: %v\n%s", err, list)
	}
	if !strings.Contains(string(list), "DejaVuMathTeXGyre") {
		t.Errorf("the web font is not in the PDF:\n%s", list)
	}
	if fonts.count("/slow.ttf") != 1 {
		t.Errorf("font requested %d times", fonts.count("/slow.ttf"))
	}
}

type countingObserver struct {
	mu       sync.Mutex
	results  map[string]int
	restarts int
	stats    []Stats
}

func (o *countingObserver) RenderStats(result string, st Stats) {
	o.mu.Lock()
	o.stats = append(o.stats, st)
	o.mu.Unlock()
}

func (o *countingObserver) RenderDone(result string, _ time.Duration) {
	o.mu.Lock()
	o.results[result]++
	o.mu.Unlock()
}

func (o *countingObserver) BrowserRestarted() {
	o.mu.Lock()
	o.restarts++
	o.mu.Unlock()
}

// TestRender_NoInputReachesThePage: the page of a render hears no mouse
// (prepareTab): no event handler runs for one, and no element is
// hovered in the print.
func TestRender_NoInputReachesThePage(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><style>html, body { margin: 0; height: 100%; }</style>
			<p>UNTOUCHED</p><script>
			for (const type of ["mousemove", "mouseover", "mouseenter", "pointermove", "pointerover"]) {
				document.addEventListener(type, () => { if (!document.body.dataset.heard) { document.body.dataset.heard = type; document.body.append(" HEARD-" + type); } }, true);
			}
			addEventListener("load", () => setTimeout(() => { if (document.querySelector(":hover")) document.body.append(" HOVERED"); }, 100));
			</script>`))
	})
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())})
	for range 2 { // the second render's tab was made ahead (spare.go)
		text := pdfText(t, mustRender(t, r, Source{URL: s.URL + "/"}, settings(spec.Options{})).pdf)
		if !strings.Contains(text, "UNTOUCHED") || strings.Contains(text, "HEARD") || strings.Contains(text, "HOVERED") {
			t.Errorf("the page heard input:\n%s", text)
		}
	}
}
