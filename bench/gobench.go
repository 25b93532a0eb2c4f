package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// goBenchResult is what the go test -bench subprocesses printed.
type goBenchResult struct {
	cmds  []string
	order []string              // benchmark names in first-seen order
	lines map[string][]benchRun // name → one entry per -count repetition
}

// benchRun is one result line: iterations and value per unit.
type benchRun struct {
	iters  int
	units  []string
	values map[string]float64
}

var benchLineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.+)$`)

// runGoBenchmarks runs the lock, render, tracing and peer guard benchmarks of the repository as
// go test subprocesses (whatever benchmarks those packages have: new ones
// are picked up, missing ones are simply absent) and parses their lines.
//
// The lock benchmarks run in two invocations because their iterations
// differ by three orders of magnitude: a wake-up takes up to a poll interval
// (500 ms in the polling baseline), an acquire+release a fraction of a
// millisecond; one -benchtime for both gives either a 20-minute run or a
// meaningless ops/s.
func runGoBenchmarks(ctx context.Context, o options, rep *report) error {
	ctx, cancel := context.WithTimeout(ctx, o.goBenchLimit)
	defer cancel()
	wakeN, opsN, opsCount := 30, 2000, min(o.runs, 5)
	if o.quick {
		wakeN, opsN, opsCount = 8, 500, 2
	}
	invocations := [][]string{
		{"-bench", "WakeLatency", "-benchtime", fmt.Sprintf("%dx", wakeN), "./internal/lock"},
		{"-bench", ".", "-skip", "WakeLatency", "-benchtime", fmt.Sprintf("%dx", opsN), "-count", strconv.Itoa(opsCount), "./internal/lock"},
		{"-bench", ".", "-benchtime", o.renderBench, "-count", strconv.Itoa(o.renderCount), "./internal/render"},
		// What tracing costs when it is off (the default) and on: one span,
		// and the export handler (in-memory storage, renderer and gate).
		{"-bench", "Span|ProcessTask", "-benchmem", "-benchtime", fmt.Sprintf("%dx", opsN*10), "-count", strconv.Itoa(opsCount), "./internal/platform/tracing", "./internal/tasks/export"},
		// One check of the egress proxy's peer guard below a running
		// Chromium: own, foreign and flooded connections.
		{"-bench", "PeerGuard", "-benchtime", "1s", "-count", strconv.Itoa(opsCount), "./internal/render/egress"},
	}
	res := &goBenchResult{lines: map[string][]benchRun{}}
	rep.goBench = res
	for _, inv := range invocations {
		deadline, _ := ctx.Deadline()
		args := append([]string{"test", "-run", "^$", "-timeout", time.Until(deadline).Round(time.Second).String()}, inv...)
		cmdline := "go " + quoteArgs(args)
		res.cmds = append(res.cmds, cmdline)
		logf("   %s", cmdline)
		out, err := runGoTest(ctx, args)
		res.parse(out)
		if err != nil {
			return fmt.Errorf("%s: %w", cmdline, err)
		}
	}
	return nil
}

// runGoTest runs go with args in its own process group, echoing its output
// to stderr. If ctx ends first, the go command and everything below it
// (test binaries, the redis-server and Chromium they started) are killed.
func runGoTest(ctx context.Context, args []string) (string, error) {
	var out harness.SyncBuffer
	cmd := exec.Command("go", args...)
	cmd.Stdout = io.MultiWriter(&out, os.Stderr)
	cmd.Stderr = cmd.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-ctx.Done():
		killTree(cmd.Process.Pid)
		<-done
		return out.String(), fmt.Errorf("stopped: %w", context.Cause(ctx))
	}
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " ^$*?|()[]{}'\"\\") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

func (g *goBenchResult) parse(out string) {
	pkg := ""
	for _, line := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p[strings.LastIndex(p, "/")+1:]
			continue
		}
		m := benchLineRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		iters, _ := strconv.Atoi(m[2])
		f := strings.Fields(m[3])
		run := benchRun{iters: iters, values: map[string]float64{}}
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			run.units = append(run.units, f[i+1])
			run.values[f[i+1]] = v
		}
		name := strings.TrimPrefix(m[1], "Benchmark")
		if pkg != "" {
			name = pkg + "." + name
		}
		if _, seen := g.lines[name]; !seen {
			g.order = append(g.order, name)
		}
		g.lines[name] = append(g.lines[name], run)
	}
}

// summary gives, per benchmark, its iterations and every metric as
// "median (min–max)" over the -count repetitions. ns/op is shown as ms/op.
func (g *goBenchResult) summary() [][3]string {
	var rows [][3]string
	for _, name := range g.order {
		runs := g.lines[name]
		var parts []string
		for _, u := range runs[0].units {
			var d dist
			for _, r := range runs {
				if v, ok := r.values[u]; ok {
					d = append(d, v)
				}
			}
			unit := u
			if u == "ns/op" && d.median() >= 1e5 { // ns stay ns below 0.1 ms
				for i := range d {
					d[i] /= 1e6
				}
				unit = "ms/op"
			}
			parts = append(parts, d.mmm(" "+unit))
		}
		iters := strconv.Itoa(runs[0].iters)
		if len(runs) > 1 {
			iters += fmt.Sprintf(" ×%d runs", len(runs))
		}
		rows = append(rows, [3]string{name, iters, strings.Join(parts, " · ")})
	}
	return rows
}

// markdown is section 5: the commands run and every benchmark's summary.
// Their whole output went to stderr during the run.
func (g *goBenchResult) markdown() string {
	var b strings.Builder
	b.WriteString("\n## 5. Lock, render and tracing Go benchmarks\n\n")
	b.WriteString("Run by `make bench` as subprocesses:\n\n")
	for _, c := range g.cmds {
		fmt.Fprintf(&b, "    %s\n", c)
	}
	b.WriteString("\n| benchmark | iterations | metrics: median (min–max) over -count runs |\n|---|---|---|\n")
	for _, s := range g.summary() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", mdCell(s[0]), mdCell(s[1]), mdCell(s[2]))
	}
	return b.String()
}
