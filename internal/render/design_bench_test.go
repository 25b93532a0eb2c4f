package render

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// cpuSeconds is the CPU time of process pid and all its descendants, alive
// or reaped (proctree.CPU).
func cpuSeconds(pid int) float64 {
	_, tree := proctree.CPU(pid)
	return tree.Seconds()
}

// selfCPU is the CPU time of this process (all its threads).
func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// goSpecDocument is the Go specification of the toolchain that runs the
// benchmark (50 pages, no script), wrapped as the bench command wraps it.
func goSpecDocument(b testing.TB) string {
	b.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "doc", "go_spec.html"))
	if err != nil {
		b.Fatal(err)
	}
	return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>The Go Programming Language Specification</title></head><body>
<h1>The Go Programming Language Specification</h1>
` + string(data) + "\n</body></html>\n"
}

// BenchmarkRenderDesign measures, in one run and interleaved (each b.Loop
// iteration renders every document once per design), the CPU-seconds (the
// browser's whole process tree, reaped renderers included, plus this
// process) and the wall time of one render of the Go specification
// (static) and of the sample manual (one script, with its wait_for), for:
//
//   - bare-full, bare-shell: the peer's design, a tab in the shared default
//     context of a Chromium with chromedp's default flags (full browser;
//     headless shell), setting the document and printing, nothing else;
//   - ours-shell, ours-full: the Renderer as configured by default (a
//     browser context per render, browser UI off, lean tab, readiness
//     waits), on each build.
//
// Ratios compare each design with the bare design on the same build
// (…/bare) and ours-shell with the peer on the full browser it ships with
// (ours-shell/bare-full). Figures only.
func BenchmarkRenderDesign(b *testing.B) {
	shell, err := chromium.HeadlessShell()
	if err != nil {
		b.Fatal(err)
	}
	full, err := chromium.FullBrowser()
	if err != nil {
		b.Fatal(err)
	}
	// The manual waits for its readiness flag, as the demo and make bench
	// export it; the peer waits for the same expression.
	docs := []struct {
		name, html string
		s          spec.PrintSettings
	}{
		{"gospec", goSpecDocument(b), settings(spec.Options{})},
		{"manual", manualHTML(b), settings(spec.Options{WaitFor: "window.__PDF_READY__===true"})},
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	newOurs := func(path string) (func(string, spec.PrintSettings) error, int) {
		r, err := New(Config{ChromiumPath: path, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		return func(html string, s spec.PrintSettings) error {
			_, err := r.Render(context.Background(), Source{HTML: html}, s, discard)
			return err
		}, r.current().pid
	}
	startPeer := func(path string) *peer.Browser {
		p, err := peer.Start(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		return p
	}
	bareFull, bareShell := startPeer(full), startPeer(shell)
	bare := func(p *peer.Browser) func(string, spec.PrintSettings) error {
		return func(html string, s spec.PrintSettings) error {
			_, err := p.Print(context.Background(), html, s.WaitFor, PrintParams(s), io.Discard)
			return err
		}
	}
	oursShell, oursShellPID := newOurs(shell)
	oursFull, oursFullPID := newOurs(full)
	designs := []struct {
		name string
		pid  int
		run  func(string, spec.PrintSettings) error
	}{
		{"bare-full", bareFull.PID(), bare(bareFull)},
		{"bare-shell", bareShell.PID(), bare(bareShell)},
		{"ours-shell", oursShellPID, oursShell},
		{"ours-full", oursFullPID, oursFull},
	}
	type sample struct{ cpu, wall []float64 }
	samples := map[string]*sample{}
	for _, d := range docs {
		for _, ds := range designs {
			if err := ds.run(d.html, d.s); err != nil { // warm up: first tab, caches
				b.Fatalf("%s %s: %v", ds.name, d.name, err)
			}
			samples[d.name+"/"+ds.name] = &sample{}
		}
	}
	for b.Loop() {
		for _, d := range docs {
			for _, ds := range designs {
				time.Sleep(100 * time.Millisecond) // let the previous design's processes exit
				c0, s0, t0 := cpuSeconds(ds.pid), selfCPU(), time.Now()
				if err := ds.run(d.html, d.s); err != nil {
					b.Fatalf("%s %s: %v", ds.name, d.name, err)
				}
				wall := time.Since(t0)
				time.Sleep(150 * time.Millisecond) // the tab's renderer exits and is reaped
				sm := samples[d.name+"/"+ds.name]
				sm.cpu = append(sm.cpu, cpuSeconds(ds.pid)-c0+selfCPU()-s0)
				sm.wall = append(sm.wall, wall.Seconds())
			}
		}
	}
	for _, d := range docs {
		cpu := func(design string) float64 { return median(samples[d.name+"/"+design].cpu) }
		for _, ds := range designs {
			sm := samples[d.name+"/"+ds.name]
			b.ReportMetric(median(sm.cpu), fmt.Sprintf("%s-%s-cpu-s", d.name, ds.name))
			b.ReportMetric(median(sm.wall)*1000, fmt.Sprintf("%s-%s-ms", d.name, ds.name))
		}
		b.ReportMetric(cpu("ours-shell")/cpu("bare-shell"), d.name+"-ours-shell/bare-shell")
		b.ReportMetric(cpu("ours-full")/cpu("bare-full"), d.name+"-ours-full/bare-full")
		b.ReportMetric(cpu("ours-shell")/cpu("bare-full"), d.name+"-ours-shell/bare-full")
	}
}
