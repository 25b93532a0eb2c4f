package assemble_test

import (
	"context"
	"io"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"

	"github.com/pdfexport/pdfexport/internal/assemble"
)

// BenchmarkAssemble_NodeManual assembles twelve chapters of the Node.js
// docs (printed once, tagged, as a manual with an outline prints them)
// untagged, tagged, and as PDF/UA with PDF/A-2b: the cost of keeping the
// structure trees; and untagged after Analyze, as a manual with a table
// of contents is (its chapters' pages counted first), the analysis
// reused. The peer's merge is the same chapters merged with pdfcpu, as
// the bench's peer (convert each page, then merge) does. Each reports
// the process's CPU-seconds per manual and the peak heap in use while
// assembling (sampled); BENCHMARKS.md has the figures.
//
//	go test -run '^$' -bench BenchmarkAssemble_NodeManual -benchtime 3x ./internal/assemble/
func BenchmarkAssemble_NodeManual(b *testing.B) {
	pages := []string{"dns.html", "assert.html", "errors.html", "cli.html", "events.html", "buffer.html",
		"path.html", "url.html", "util.html", "stream.html", "process.html", "os.html"}
	parts, _ := printChapters(b, b.TempDir(), pages...)
	for _, bc := range []struct {
		name    string
		opts    assemble.Options
		analyze bool // Analyze first, as a manual with contents is (its pages counted), then assemble from that
	}{
		{"untagged", assemble.Options{Outline: true}, false},
		{"untagged_analyzed_first", assemble.Options{Outline: true}, true},
		{"tagged", assemble.Options{Outline: true, Tagged: true}, false},
		{"pdf_ua+pdf_a", assemble.Options{Outline: true, Conformance: assemble.Conformance{UA: true, PDFA: "2b"}}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.opts.Title = "Node.js"
			var st assemble.Stats
			peak, cpu := heapPeak(), processCPU()
			for b.Loop() {
				opts := bc.opts
				if bc.analyze {
					an, _, err := assemble.Analyze(context.Background(), parts)
					if err != nil {
						b.Fatal(err)
					}
					opts.Analysis = an
				}
				var err error
				if st, err = assemble.Assemble(context.Background(), io.Discard, parts, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(cpu()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peak()>>20), "peak-heap-MiB")
			b.ReportMetric(float64(st.Pages), "pages")
			b.ReportMetric(float64(st.Bytes>>20), "MiB-written")
		})
	}
	b.Run("peer_pdfcpu_merge", func(b *testing.B) {
		paths := make([]string, len(parts))
		for i, p := range parts {
			paths[i] = p.Path
		}
		out := filepath.Join(b.TempDir(), "merged.pdf")
		peak, cpu := heapPeak(), processCPU()
		for b.Loop() {
			if err := api.MergeCreateFile(paths, out, false, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(cpu()/float64(b.N), "cpu-s/op")
		b.ReportMetric(float64(peak()>>20), "peak-heap-MiB")
	})
}

// processCPU returns a function that reports the CPU-seconds (user and
// system) this process used since processCPU was called.
func processCPU() func() float64 {
	now := func() float64 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	start := now()
	return func() float64 { return now() - start }
}

// heapPeak samples the heap in use every 5 ms until the returned function
// is called, which returns the highest sample.
func heapPeak() func() uint64 {
	runtime.GC()
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				result <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-result
	}
}
