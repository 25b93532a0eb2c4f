package render

import (
	"cmp"
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

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
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

// median is the middle value of v (the upper of the two middle ones).
func median[T cmp.Ordered](v []T) T {
	s := slices.Clone(v)
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

func manualHTML(b testing.TB) string {
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
