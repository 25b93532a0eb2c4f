package render

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// nodeDocs is the Node.js API documentation of Debian's nodejs package
// (bench section M's chapters); its absence skips that document.
const nodeDocs = "/usr/share/doc/nodejs/api"

// pythonDocs is Python's documentation, a Sphinx build, of Debian's
// python3.11-doc package (bench section M's manual of short chapters: the
// tutorial); its absence skips that document.
const pythonDocs = "/usr/share/doc/python3.11/html"

// stepLog records, for one render at a time, when each step of its path
// ended and the browser's whole process tree CPU at that moment.
type stepLog struct {
	pid      int
	wallOnly bool // no CPU samples (they take milliseconds each)
	mu       sync.Mutex
	steps    []string
	at       []time.Time
	cpu      []float64       // tree CPU, seconds (10 ms ticks, reaped included)
	ns       []map[int]int64 // on-CPU ns of every live process of the tree (schedstat)
}

// schedNS is the on-CPU time in ns of every live process of the tree of pid,
// summed over its threads (/proc/PID/task/TID/schedstat): finer than the
// clock ticks of stat, but a process that exited is gone from it.
func schedNS(pid int) map[int]int64 {
	out := map[int]int64{}
	for _, p := range append([]int{pid}, proctree.Descendants(pid)...) {
		dir := fmt.Sprintf("/proc/%d/task", p)
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		var sum int64
		for _, t := range tasks {
			b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
			if err != nil {
				continue
			}
			var ns int64
			fmt.Sscan(string(b), &ns)
			sum += ns
		}
		out[p] = sum
	}
	return out
}

// stepCPU is the CPU ms the processes alive at both samples (and those
// started between them) used from a to b.
func stepCPU(a, b map[int]int64) float64 {
	var d int64
	for p, v := range b {
		d += v - a[p]
	}
	return float64(d) / 1e6
}

func (l *stepLog) reset() {
	l.mu.Lock()
	l.steps, l.at, l.cpu, l.ns = l.steps[:0], l.at[:0], l.cpu[:0], l.ns[:0]
	l.mu.Unlock()
	l.mark("start")
}

func (l *stepLog) mark(step string) {
	var c float64
	var ns map[int]int64
	if !l.wallOnly {
		c, ns = cpuSeconds(l.pid), schedNS(l.pid)
	}
	l.mu.Lock()
	l.steps, l.at, l.cpu, l.ns = append(l.steps, step), append(l.at, time.Now()), append(l.cpu, c), append(l.ns, ns)
	l.mu.Unlock()
}

// BenchmarkRenderBreakdown breaks one render down by step of its path, wall
// time and the browser's CPU (its whole process tree, reaped renderers
// included) between consecutive steps, for the peer's bare tab (barePrint,
// the same steps marked), for the Renderer as configured, and for the
// Renderer without its tab guard's Fetch interception (no-guard), a step
// the bare tab does not have. One render at a time, interleaved; "after"
// is what the browser spent in the 200 ms after the render returned (the
// tab's renderer exiting). Figures only (tables on stderr). BREAKDOWN_DOCS
// and BREAKDOWN_VARIANTS select documents and variants, BREAKDOWN_CPU=0
// leaves out the CPU samples.
func BenchmarkRenderBreakdown(b *testing.B) {
	shell, err := chromium.HeadlessShell()
	if err != nil {
		b.Fatal(err)
	}
	type doc struct {
		name string
		src  Source
		s    spec.PrintSettings
	}
	docs := []doc{
		{"gospec", Source{HTML: goSpecDocument(b)}, settings(spec.Options{})},
		{"manual", Source{HTML: manualHTML(b)}, settings(spec.Options{WaitFor: "window.__PDF_READY__===true"})},
	}
	var hosts []string
	if _, err := os.Stat(nodeDocs + "/fs.html"); err == nil {
		srv := httptest.NewServer(http.FileServer(http.Dir(nodeDocs)))
		b.Cleanup(srv.Close)
		hosts = append(hosts, strings.TrimPrefix(srv.URL, "http://"))
		docs = append(docs, doc{"node-dns", Source{URL: srv.URL + "/dns.html"}, settings(spec.Options{Outline: true})})
	}
	if _, err := os.Stat(pythonDocs + "/tutorial/classes.html"); err == nil {
		srv := httptest.NewServer(http.FileServer(http.Dir(pythonDocs)))
		b.Cleanup(srv.Close)
		hosts = append(hosts, strings.TrimPrefix(srv.URL, "http://"))
		docs = append(docs, doc{"python-classes", Source{URL: srv.URL + "/tutorial/classes.html", MarkAnchors: true}, settings(spec.Options{Outline: true})})
	}
	allowed := allowlist.MustParse(strings.Join(hosts, ","))
	if only := os.Getenv("BREAKDOWN_DOCS"); only != "" {
		docs = slices.DeleteFunc(docs, func(d doc) bool { return !slices.Contains(strings.Split(only, ","), d.name) })
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// BREAKDOWN_CPU=0: walls only, without the milliseconds each CPU sample
	// adds to every step.
	wallOnly := os.Getenv("BREAKDOWN_CPU") == "0"
	type system struct {
		name string
		log  *stepLog
		run  func(d doc) error
	}
	ours := func(name string, setup ...func(*Renderer)) system {
		r, err := New(Config{ChromiumPath: shell, Logger: quiet, AllowedHosts: allowed})
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range setup {
			f(r)
		}
		log := &stepLog{wallOnly: wallOnly}
		r.hooks.mark = log.mark
		if err := r.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		log.pid = r.current().pid
		return system{name, log, func(d doc) error {
			_, err := r.Render(context.Background(), d.src, d.s, discard)
			return err
		}}
	}
	p, err := peer.Start(context.Background(), shell)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	bareLog := &stepLog{pid: p.PID(), wallOnly: wallOnly}
	systems := []system{
		{"bare-shell", bareLog, func(d doc) error {
			return barePrint(context.Background(), p, d.src, d.s, "", io.Discard, bareLog.mark)
		}},
		ours("ours"),
	}
	// BREAKDOWN_VARIANTS: a comma-separated subset of the variants ("" all,
	// "none" none).
	variants := []struct {
		name  string
		setup func(*Renderer)
	}{
		{"ours-no-guard", func(r *Renderer) { r.hooks.skipTabGuard = true }},
	}
	want := os.Getenv("BREAKDOWN_VARIANTS")
	for _, v := range variants {
		if want == "" || slices.Contains(strings.Split(want, ","), v.name) {
			systems = append(systems, ours(v.name, v.setup))
		}
	}
	type key struct{ doc, sys string }
	type sample struct {
		steps     []string
		wall, cpu [][]float64 // per step, per render: ms since the step before, CPU ms
		total     []float64
		totalCPU  []float64
	}
	samples := map[key]*sample{}
	for _, d := range docs {
		for _, s := range systems {
			if err := s.run(d); err != nil { // warm up
				b.Fatalf("%s %s: %v", s.name, d.name, err)
			}
			samples[key{d.name, s.name}] = &sample{}
		}
	}
	for b.Loop() {
		for _, d := range docs {
			for _, s := range systems {
				time.Sleep(100 * time.Millisecond)
				s.log.reset()
				if err := s.run(d); err != nil {
					b.Fatalf("%s %s: %v", s.name, d.name, err)
				}
				s.log.mark("returned")
				time.Sleep(200 * time.Millisecond)
				s.log.mark("after")
				l, sm := s.log, samples[key{d.name, s.name}]
				l.mu.Lock()
				if sm.steps == nil {
					sm.steps = slices.Clone(l.steps[1:])
					sm.wall, sm.cpu = make([][]float64, len(sm.steps)), make([][]float64, len(sm.steps))
				}
				if !slices.Equal(sm.steps, l.steps[1:]) {
					b.Fatalf("%s %s: steps %v, then %v", s.name, d.name, sm.steps, l.steps[1:])
				}
				for i := 1; i < len(l.steps); i++ {
					sm.wall[i-1] = append(sm.wall[i-1], ms(l.at[i].Sub(l.at[i-1])))
					sm.cpu[i-1] = append(sm.cpu[i-1], stepCPU(l.ns[i-1], l.ns[i]))
				}
				n := len(l.steps)
				sm.total = append(sm.total, ms(l.at[n-2].Sub(l.at[0])))
				sm.totalCPU = append(sm.totalCPU, 1000*(l.cpu[n-1]-l.cpu[0]))
				l.mu.Unlock()
			}
		}
	}
	for _, d := range docs {
		var out strings.Builder
		fmt.Fprintf(&out, "\n%s: median ms (wall · browser CPU) per step, %d renders each\n", d.name, len(samples[key{d.name, "ours"}].total))
		for _, s := range systems {
			sm := samples[key{d.name, s.name}]
			fmt.Fprintf(&out, "| %s | total %.0f · %.0f |", s.name, median(sm.total), median(sm.totalCPU))
			for i, st := range sm.steps {
				fmt.Fprintf(&out, " %s %.1f · %.1f |", st, median(sm.wall[i]), median(sm.cpu[i]))
			}
			out.WriteString("\n")
			b.ReportMetric(median(sm.total), d.name+"-"+s.name+"-ms")
			b.ReportMetric(median(sm.totalCPU), d.name+"-"+s.name+"-cpu-ms")
		}
		fmt.Fprint(os.Stderr, out.String()) // b.Log truncates long benchmark output
	}
}
