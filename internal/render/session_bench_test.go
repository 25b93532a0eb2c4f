package render

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// BenchmarkSessionPages renders the pages of Debian's Node.js API
// documentation as a manual's chapters are rendered (one session, one page
// at a time, anchors and headings marked, the chapters' print settings),
// each page once as the Renderer does and once with each variant, in
// alternating order page by page (ABBA), so that the machine's drift falls
// on both alike. It reports the browser tree's CPU per page (schedstat of
// every process, the renderer's included) and the wall time, and each
// variant against ours: the median of the per-page ratios and the ratio of
// the sums. The design's baseline is ours, since the variants are what it
// would be without one of its parts; the peer's bare tab is section M's
// and BenchmarkRenderBreakdown's.
//
//	go test -run '^$' -bench BenchmarkSessionPages -benchtime 1x ./internal/render/
//
// It takes the first 30 pages (in name order), or SESSION_PAGES of them
// (all: 63); SESSION_VARIANTS is a comma-separated subset of the variants.
func BenchmarkSessionPages(b *testing.B) {
	pages, err := filepath.Glob(nodeDocs + "/*.html")
	if err != nil || len(pages) == 0 {
		b.Skipf("Debian's Node.js documentation is not installed (%s)", nodeDocs)
	}
	pages = slices.DeleteFunc(pages, func(p string) bool { return filepath.Base(p) == "all.html" }) // every page in one
	for i, p := range pages {
		pages[i] = filepath.Base(p)
	}
	if n := envInt(b, "SESSION_PAGES", 30); n < len(pages) {
		pages = pages[:n]
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(nodeDocs)))
	b.Cleanup(srv.Close)
	r := benchRenderer(b, Config{AllowedHosts: allowlist.MustParse(strings.TrimPrefix(srv.URL, "http://"))})
	type variant struct {
		name string
		set  func(r *Renderer, on bool)
	}
	variants := []variant{
		{"layout-after-print", func(r *Renderer, on bool) { r.hooks.keepLayoutAfterPrint = on }},
	}
	if want := os.Getenv("SESSION_VARIANTS"); want != "" {
		variants = slices.DeleteFunc(variants, func(v variant) bool { return !slices.Contains(strings.Split(want, ","), v.name) })
	}
	s := spec.ChapterSettings(spec.Options{Outline: true}.Settings())
	s.Outline, s.Tagged = false, false // the chapters of a manual with an outline mark their headings
	pid := r.current().pid
	type sample struct{ cpu, wall []float64 }  // per page, ms
	samples := make([]sample, len(variants)+1) // [0]: ours
	renders := 0
	do := func(page, session string) {
		if _, err := r.Render(context.Background(), Source{URL: srv.URL + "/" + page, MarkAnchors: true, MarkHeadings: true, Session: session}, s, discard); err != nil {
			b.Fatalf("%s: %v", page, err)
		}
	}
	render := func(page string) (cpu, wall float64) {
		// A session ends after sessionMaxRenders: a new one before that,
		// started by a render that is not counted, so that no counted
		// render pays for starting a renderer process.
		const perSession = sessionMaxRenders - 4
		session := fmt.Sprintf("bench-%d", renders/perSession)
		if renders%perSession == 0 {
			do(pages[0], session)
		}
		renders++
		before, start := schedNS(pid), time.Now()
		do(page, session)
		return stepCPU(before, schedNS(pid)), ms(time.Since(start))
	}
	for b.Loop() {
		for i, page := range pages {
			for j, v := range variants {
				order := []int{0, j + 1}
				if i%2 == 1 {
					order = []int{j + 1, 0}
				}
				for _, k := range order {
					v.set(r, k != 0)
					cpu, wall := render(page)
					v.set(r, false)
					samples[k].cpu = append(samples[k].cpu, cpu)
					samples[k].wall = append(samples[k].wall, wall)
				}
			}
		}
	}
	sum := func(v []float64) float64 {
		var t float64
		for _, x := range v {
			t += x
		}
		return t
	}
	// ours was sampled once per variant and page; its j-th block of
	// samples pairs with variant j.
	oursOf := func(j int) sample {
		var o sample
		for i := range samples[0].cpu {
			if i%len(variants) == j {
				o.cpu = append(o.cpu, samples[0].cpu[i])
				o.wall = append(o.wall, samples[0].wall[i])
			}
		}
		return o
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d Node.js pages in sessions, each by ours and by each variant (ABBA): CPU ms and wall ms\n", len(pages))
	for j, v := range variants {
		o, w := oursOf(j), samples[j+1]
		ratios := make([]float64, len(o.cpu))
		for i := range o.cpu {
			ratios[i] = w.cpu[i] / max(o.cpu[i], 1)
		}
		fmt.Fprintf(&out, "| ours | CPU-s %.2f | wall s %.2f | median page CPU ms %.0f |\n", sum(o.cpu)/1000, sum(o.wall)/1000, median(o.cpu))
		fmt.Fprintf(&out, "| %s | CPU-s %.2f | wall s %.2f | median page CPU ms %.0f | CPU vs ours: sums %.3f×, median page %.3f× |\n",
			v.name, sum(w.cpu)/1000, sum(w.wall)/1000, median(w.cpu), sum(w.cpu)/sum(o.cpu), median(ratios))
		b.ReportMetric(sum(o.cpu)/1000/float64(len(pages)), "ours-cpu-s/page")
		b.ReportMetric(sum(w.cpu)/1000/float64(len(pages)), v.name+"-cpu-s/page")
		b.ReportMetric(sum(w.cpu)/sum(o.cpu), v.name+"-cpu-vs-ours")
	}
	fmt.Fprint(os.Stderr, out.String())
}
