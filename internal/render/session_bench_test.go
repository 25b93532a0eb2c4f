package render

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// BenchmarkSessionPages renders the pages of Debian's Node.js API
// documentation as a manual's chapters are rendered (one session, one page
// at a time, anchors and headings marked, the chapters' print settings):
// each page once as the Renderer does and once by the peer's bare tab (a tab in a
// shared browser context printing the same page, on the same binary), the
// order turning by one system from page to page, so that the machine's
// drift falls on all alike. It reports each system's browser tree CPU
// (meterTree: processes that exit during a render included) and wall time
// per page, and its ratio to
// ours: of the sums, and the median of the per-page ratios.
//
//	go test -run '^$' -bench BenchmarkSessionPages -benchtime 1x ./internal/render/
//
// It takes the first 30 pages (in name order), or SESSION_PAGES of them
// (all: 63).
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
	// One browser for the whole run: the meters follow its process tree,
	// which a recycled browser (MaxRendersPerBrowser) would leave, its
	// later renders then metered at nothing.
	r := benchRenderer(b, Config{AllowedHosts: allowlist.MustParse(strings.TrimPrefix(srv.URL, "http://")), MaxRendersPerBrowser: math.MaxInt32})
	s := spec.ChapterSettings(spec.Options{Outline: true}.Settings())
	s.Outline, s.Tagged = false, false // the chapters of a manual with an outline mark their headings
	p, err := peer.Start(context.Background(), r.cfg.ChromiumPath)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	renders := 0
	do := func(page, session string) {
		if _, err := r.Render(context.Background(), Source{URL: srv.URL + "/" + page, MarkAnchors: true, MarkHeadings: true, Session: session}, s, discard); err != nil {
			b.Fatalf("%s: %v", page, err)
		}
	}
	// A session ends after sessionMaxRenders: a new one before that,
	// started by a render that is not counted (prepare), so that no
	// counted render pays for starting a renderer process.
	const perSession = sessionMaxRenders - 4
	session := func() string { return fmt.Sprintf("bench-%d", renders/perSession) }
	prepare := func() {
		if renders%perSession == 0 {
			do(pages[0], session())
		}
	}
	ours := func(page string) {
		do(page, session())
		renders++
	}
	// The systems: ours and the peer's bare tab (a tab in a shared
	// context printing the page, on the same binary). Each renders every
	// page once, the order turning by one system a page.
	type system struct {
		name    string
		pid     int
		prepare func() // before the render, not counted (nil: none)
		render  func(page string)
		cpu     []float64 // per page, ms: the browser tree's (meterTree)
		wall    []float64
	}
	systems := []*system{{name: "ours", pid: r.current().pid, prepare: prepare, render: ours}}
	systems = append(systems, &system{name: "peer bare tab", pid: p.PID(), render: func(page string) {
		if err := barePrint(context.Background(), p, Source{URL: srv.URL + "/" + page}, s, "", io.Discard, func(string) {}); err != nil {
			b.Fatalf("peer %s: %v", page, err)
		}
	}})
	for b.Loop() {
		for i, page := range pages {
			for k := range systems {
				sy := systems[(i+k)%len(systems)]
				if sy.prepare != nil {
					sy.prepare()
				}
				meter, start := meterTree(sy.pid), time.Now()
				sy.render(page)
				sy.wall = append(sy.wall, ms(time.Since(start)))
				sy.cpu = append(sy.cpu, meter())
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
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d Node.js pages, each rendered once by each system, the order turning page by page; CPU-s and wall s summed\n", len(pages))
	o := systems[0]
	for _, sy := range systems {
		ratios := make([]float64, len(o.cpu))
		for i := range o.cpu {
			ratios[i] = sy.cpu[i] / max(o.cpu[i], 1)
		}
		fmt.Fprintf(&out, "| %s | CPU-s %.2f | wall s %.2f | median page CPU ms %.0f | CPU against ours: sums %.3f×, median page %.3f× |\n",
			sy.name, sum(sy.cpu)/1000, sum(sy.wall)/1000, median(sy.cpu), sum(sy.cpu)/sum(o.cpu), median(ratios))
		b.ReportMetric(sum(sy.cpu)/1000/float64(len(pages)), strings.ReplaceAll(sy.name, " ", "-")+"-cpu-s/page")
		b.ReportMetric(sum(sy.wall)/1000/float64(len(pages)), strings.ReplaceAll(sy.name, " ", "-")+"-s/page")
	}
	fmt.Fprint(os.Stderr, out.String())
}

// meterTree samples the on-CPU time of every process of pid's tree every
// 5 ms until the returned function is called, which returns the CPU ms
// the tree used meanwhile: each process's last sample less its first (0
// for one started meanwhile). A process that exits keeps its time up to
// its last sample, where a tree's sum at two moments loses it (the peer's
// tabs each run in a renderer process that ends with the tab).
func meterTree(pid int) (stop func() float64) {
	first, last := schedNS(pid), map[int]int64{}
	maps.Copy(last, first)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				maps.Copy(last, schedNS(pid))
			}
		}
	}()
	return func() float64 {
		close(done)
		<-finished
		maps.Copy(last, schedNS(pid))
		var ns int64
		for p, n := range last {
			ns += n - first[p] // first[p] is 0 for a process started meanwhile
		}
		return float64(ns) / 1e6
	}
}
