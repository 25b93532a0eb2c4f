package render

import (
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testsupport"
)

// Benchmarks print figures (b.ReportMetric) and assert nothing. Run them with
// e.g. go test -run '^$' -bench . -benchtime=3x ./internal/render/

var logVersionOnce sync.Once

func benchRenderer(b *testing.B, cfg Config, setup ...func(*Renderer)) *Renderer {
	b.Helper()
	cfg.ChromiumPath = testsupport.ChromiumPath(b)
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range setup {
		f(r)
	}
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	logVersionOnce.Do(func() { b.Logf("browser: %s, GOMAXPROCS %d", r.current().version, runtime.GOMAXPROCS(0)) })
	return r
}

func discard(_ context.Context, pdf io.Reader) error {
	_, err := io.Copy(io.Discard, pdf)
	return err
}

func benchRender(b *testing.B, r *Renderer, src Source, s spec.PrintSettings) Stats {
	b.Helper()
	st, err := r.Render(context.Background(), src, s, discard)
	if err != nil {
		b.Fatalf("Render: %v", err)
	}
	return st
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkColdStart: New, Start and the first render of a one-page document.
func BenchmarkColdStart(b *testing.B) {
	var start, first []time.Duration
	for b.Loop() {
		t0 := time.Now()
		r, err := New(Config{ChromiumPath: testsupport.ChromiumPath(b), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := r.Render(context.Background(), Source{HTML: "<p>first</p>"}, settings(spec.Options{}), discard); err != nil {
			b.Fatal(err)
		}
		start, first = append(start, t1.Sub(t0)), append(first, time.Since(t1))
		b.StopTimer()
		r.Close()
		b.StartTimer()
	}
	b.ReportMetric(ms(median(start)), "start-ms")
	b.ReportMetric(ms(median(first)), "first-render-ms")
	b.ReportMetric(ms(median(start)+median(first)), "cold-ms")
}

func manualHTML(b *testing.B) string {
	b.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "examples", "manual.html"))
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// BenchmarkWarmRender: the 22-page manual on a warm browser, untagged and
// tagged; median ms, PDF bytes and pages.
func BenchmarkWarmRender(b *testing.B) {
	html := manualHTML(b)
	r := benchRenderer(b, Config{})
	benchRender(b, r, Source{HTML: html}, settings(spec.Options{})) // warm up
	for _, tagged := range []bool{false, true} {
		name := "untagged"
		if tagged {
			name = "tagged"
		}
		b.Run(name, func(b *testing.B) {
			var d []time.Duration
			var st Stats
			for b.Loop() {
				st = benchRender(b, r, Source{HTML: html}, settings(spec.Options{Tagged: tagged}))
				d = append(d, st.Duration)
			}
			b.ReportMetric(ms(median(d)), "median-ms")
			b.ReportMetric(float64(st.Bytes), "pdf-bytes")
			b.ReportMetric(float64(st.Pages), "pages")
		})
	}
}

// BenchmarkThroughput: renders per second of a 3-page document with 1, 2
// and 4 renders in flight (Concurrency set to match).
func BenchmarkThroughput(b *testing.B) {
	html := multiPageHTML(3)
	for _, c := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("concurrency-%d", c), func(b *testing.B) {
			r := benchRenderer(b, Config{Concurrency: c})
			benchRender(b, r, Source{HTML: html}, settings(spec.Options{}))
			const perRound = 8
			var renders atomic.Int64
			var busy time.Duration
			for b.Loop() {
				t0 := time.Now()
				var wg sync.WaitGroup
				var next atomic.Int64
				for range c {
					wg.Go(func() {
						for next.Add(1) <= perRound {
							benchRender(b, r, Source{HTML: html}, settings(spec.Options{}))
							renders.Add(1)
						}
					})
				}
				wg.Wait()
				busy += time.Since(t0)
			}
			b.ReportMetric(float64(renders.Load())/busy.Seconds(), "renders/s")
		})
	}
}

// rawPrint navigates the tab t to u, waits for its load and streams a PDF to
// nowhere: the work every design does, without the Renderer's guard and
// readiness steps, so that the designs compare on their tab lifecycle.
func rawPrint(ctx context.Context, t *chromedp.Target, u string) error {
	if _, err := cdp.Call(ctx, t, page.Navigate, page.NavigateParams{URL: u}); err != nil {
		return err
	}
	for {
		res, err := cdp.Call(ctx, t, cdpruntime.Evaluate, cdpruntime.EvaluateParams{Expression: `document.readyState + " " + location.href`, ReturnByValue: new(true)})
		if err != nil {
			return err
		}
		if string(res.Result.Value) == fmt.Sprintf("%q", "complete "+u) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := cdp.Call(ctx, t, page.PrintToPDF, page.PrintToPDFParams{TransferMode: page.PrintToPDFTransferModeReturnAsStream, GenerateTaggedPDF: new(false)})
	if err != nil {
		return err
	}
	for {
		chunk, err := cdp.Call(ctx, t, cdpio.Read, cdpio.ReadParams{Handle: res.Stream, Size: readChunk})
		if err != nil {
			return err
		}
		if chunk.EOF {
			break
		}
	}
	_, err = cdp.Call(ctx, t, cdpio.Close, cdpio.CloseParams{Handle: res.Stream})
	return err
}

// BenchmarkTabDesign compares, in one run, four ways to give each render a
// clean page, on the same 3-page document served by a local server:
// a new browser context and tab per render (the Renderer's design), a new tab
// in the shared default context (not isolated), one warm tab reset between
// renders (about:blank, clear cookies, origin storage and cache), and a new
// browser per render. It reports the median ms of each and its ratio to the
// context-per-render design, and also the full Render of both Renderer
// designs.
func BenchmarkTabDesign(b *testing.B) {
	body := multiPageHTML(3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, body)
	}))
	defer srv.Close()
	allow := allowlist.MustParse(strings.TrimPrefix(srv.URL, "http://"))
	r := benchRenderer(b, Config{AllowedHosts: allow})
	br := r.current()
	ctx := context.Background()
	var n atomic.Int64
	pageURL := func() string { return fmt.Sprintf("%s/doc?%d", srv.URL, n.Add(1)) }

	fresh := func(opts ...chromedp.ContextOption) error {
		tctx, cancel := chromedp.NewContext(br.ctx, opts...)
		defer cancel()
		if err := chromedp.Do(tctx); err != nil {
			return err
		}
		return rawPrint(tctx, chromedp.FromContext(tctx).Target, pageURL())
	}
	warmCtx, warmCancel := chromedp.NewContext(br.ctx, chromedp.WithNewWindow(false))
	defer warmCancel()
	if err := chromedp.Do(warmCtx); err != nil {
		b.Fatal(err)
	}
	warm := chromedp.FromContext(warmCtx).Target
	reuse := func() error {
		if err := rawPrint(warmCtx, warm, pageURL()); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, warm, page.Navigate, page.NavigateParams{URL: "about:blank"}); err != nil {
			return err
		}
		if _, err := cdp.Call(ctx, warm, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			return fmt.Errorf("clear cookies: %w", err)
		}
		if _, err := cdp.Call(ctx, warm, network.ClearBrowserCache, cdp.Empty{}); err != nil {
			return fmt.Errorf("clear cache: %w", err)
		}
		if _, err := cdp.Call(ctx, warm, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: srv.URL, StorageTypes: "all"}); err != nil {
			return fmt.Errorf("clear storage: %w", err)
		}
		return nil
	}
	newBrowser := func() error {
		nr, err := New(Config{ChromiumPath: r.cfg.ChromiumPath, AllowedHosts: allow, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			return err
		}
		defer nr.Close()
		if err := nr.Start(ctx); err != nil {
			return err
		}
		tctx, cancel := chromedp.NewContext(nr.current().ctx, chromedp.WithNewWindow(false))
		defer cancel()
		if err := chromedp.Do(tctx); err != nil {
			return err
		}
		return rawPrint(tctx, chromedp.FromContext(tctx).Target, pageURL())
	}
	full := func(d tabDesign) func() error {
		return func() error {
			r.design = d
			_, err := r.Render(ctx, Source{URL: pageURL()}, settings(spec.Options{}), discard)
			return err
		}
	}
	designs := []struct {
		name string
		run  func() error
	}{
		{"context-per-render", func() error { return fresh(chromedp.WithNewBrowserContext()) }},
		{"context-no-window", func() error {
			res, err := cdp.Call(ctx, br.session(), target.CreateBrowserContext, target.CreateBrowserContextParams{DisposeOnDetach: new(true)})
			if err != nil {
				return err
			}
			defer cdp.Call(ctx, br.session(), target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: res.BrowserContextID})
			return fresh(chromedp.WithExistingBrowserContext(res.BrowserContextID), chromedp.WithNewWindow(false))
		}},
		{"tab-per-render-shared", func() error { return fresh(chromedp.WithNewWindow(false)) }},
		{"warm-tab-reuse", reuse},
		{"browser-per-render", newBrowser},
		{"full-render-context", full(designContextPerRender)},
		{"full-render-shared", full(designSharedContext)},
	}
	times := make([][]time.Duration, len(designs))
	for _, d := range designs { // warm up each
		if err := d.run(); err != nil {
			b.Fatalf("%s: %v", d.name, err)
		}
	}
	for b.Loop() {
		for i, d := range designs { // interleaved, so load changes hit all alike
			t0 := time.Now()
			if err := d.run(); err != nil {
				b.Fatalf("%s: %v", d.name, err)
			}
			times[i] = append(times[i], time.Since(t0))
		}
	}
	r.design = designContextPerRender
	base := ms(median(times[0]))
	for i, d := range designs {
		m := ms(median(times[i]))
		b.ReportMetric(m, d.name+"-ms")
		if i > 0 && i < 5 {
			b.ReportMetric(m/base, d.name+"/context-ratio")
		}
	}
}

// writeNoiseJPEGs writes n distinct w×h JPEGs of random pixels (they do not
// compress, and Chromium embeds JPEG data as is) into dir.
func writeNoiseJPEGs(b *testing.B, dir string, n, w, h int) int64 {
	b.Helper()
	var total int64
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for j := range img.Pix {
			img.Pix[j] = byte(rng.Uint32())
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d.jpg", i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := jpeg.Encode(f, img, &jpeg.Options{Quality: 100}); err != nil {
			b.Fatal(err)
		}
		st, _ := f.Stat()
		total += st.Size()
		f.Close()
	}
	return total
}

// BenchmarkStreamLargePDF prints a PDF of more than 100 MB (pages of
// incompressible JPEGs served by a local server) into a discarding sink and
// samples the Go heap every 2 ms: the peak shows that the PDF is streamed,
// not held. Select it with -bench StreamLargePDF.
func BenchmarkStreamLargePDF(b *testing.B) {
	dir := b.TempDir()
	const images = 9
	jpegBytes := writeNoiseJPEGs(b, dir, images, 2600, 2600)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	var html strings.Builder
	html.WriteString(`<!doctype html><style>img { width: 100%; page-break-after: always; display: block }</style>`)
	for i := range images {
		fmt.Fprintf(&html, `<img src="%s/%d.jpg">`, srv.URL, i)
	}
	r := benchRenderer(b, Config{AllowedHosts: allowlist.MustParse(strings.TrimPrefix(srv.URL, "http://")), Timeout: 5 * time.Minute})
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var m runtime.MemStats
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	})
	var st Stats
	var d []time.Duration
	for b.Loop() {
		st = benchRender(b, r, Source{HTML: html.String()}, settings(spec.Options{}))
		d = append(d, st.Duration)
	}
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(st.Bytes)/(1<<20), "pdf-MiB")
	b.ReportMetric(float64(jpegBytes)/(1<<20), "images-MiB")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-inuse-MiB")
	b.ReportMetric(float64(base.HeapInuse)/(1<<20), "base-heap-inuse-MiB")
	b.ReportMetric(ms(median(d)), "median-ms")
	b.ReportMetric(float64(st.Bytes)/(1<<20)/median(d).Seconds(), "MiB/s")
}
