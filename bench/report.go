package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

type pipelineResult struct {
	bare, raw, pipe, renderMS, pickup dist
}

type goSpecResult struct {
	path                string
	htmlBytes           int
	ms, pages, bytes    dist // outline on
	plainMS, plainBytes dist // outline off, same document
}

type hitResult struct {
	label                         string
	e2e, pickup, handler, observe dist // breakdown only in-process
}

type pickupResult struct {
	kind     string // default, asynq, whatif
	label    string
	interval time.Duration
	lat      dist
}

type dedupResult struct {
	label    string
	baseline bool // no gate
	k        int
	single   dist // one export of a fresh artifact, same fleet
	wall     dist // K duplicates, first enqueue → last result seen
	renders  dist // renders performed for the K requests
	flagged  dist // results with rendered:true
	renderMS dist // render_ms of the render(s)
	failOpen dist // gate entries that failed open
}

type report struct {
	opts     options
	started  time.Time
	total    time.Duration
	machine  machine
	goBench  *goBenchResult
	dedup    []dedupResult
	pickups  []pickupResult
	hits     []hitResult
	pipeline pipelineResult
	goSpec   goSpecResult
	distinct *distinctResult
	capacity *capacityResult
	delivery *deliveryResult
	fairness *fairnessResult
	costs    *costsResult
	docopts  *docoptsResult
	manual   *manualResult
	idle     *idleResult
	links    *linksResult
	compat   *compatResult
	gops     *gopsResult
}

// row is one line of the summary table.
type row struct {
	id, what, result, baseline, ratio, target string
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func allEqual(d dist, v float64) bool {
	for _, x := range d {
		if x != v {
			return false
		}
	}
	return len(d) > 0
}

// countText shows whole counts: "1 (every run)" or "1 (1–14)".
func countText(d dist) string {
	switch {
	case len(d) == 0:
		return "–"
	case len(d) > 1 && allEqual(d, d[0]):
		return fmt.Sprintf("%.0f (every run)", d[0])
	case len(d) == 1:
		return fmt.Sprintf("%.0f", d[0])
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", d.median(), d.min(), d.max())
}

// rows are the summary table: the scenarios measured in report.go's own
// results, then every section's.
func (r *report) rows() []row {
	var rows []row
	rows = append(rows, r.dedupRows()...)
	rows = append(rows, r.pickupRows()...)
	rows = append(rows, r.hitRows()...)
	rows = append(rows, r.pipelineRows()...)
	return append(rows, r.sectionRows()...)
}

// dedupRows are scenario 1's lines: K duplicates per fleet, and each gated
// fleet against the no-gate baseline.
func (r *report) dedupRows() []row {
	var rows []row
	var base *dedupResult
	for i := range r.dedup {
		if r.dedup[i].baseline {
			base = &r.dedup[i]
		}
	}
	for _, d := range r.dedup {
		wallRatio := ratios(d.wall, d.single)
		target := fmt.Sprintf("every task renders (%d)", d.k)
		if !d.baseline {
			ok := allEqual(d.renders, 1) && wallRatio.median() <= 1.15
			target = "1 render; wall ≤ 1.15× one export — " + verdict(ok)
		}
		result := fmt.Sprintf("renders %s; wall %s", countText(d.renders), d.wall.mmm(" ms"))
		if !d.baseline && d.failOpen.max() > 0 {
			result += "; fail-open gate entries " + countText(d.failOpen)
		}
		rows = append(rows, row{"1", fmt.Sprintf("K=%d duplicates, %s", d.k, d.label), result,
			"one export, same fleet: " + d.single.mmm(" ms") + "; slowest render_ms: " + d.renderMS.mmm(" ms"),
			"wall/one export " + wallRatio.mmm("×"), target})
		if !d.baseline && base != nil && len(base.wall) > 0 {
			rows = append(rows, row{"1", fmt.Sprintf("↳ gate vs no-gate baseline (%s)", d.label),
				fmt.Sprintf("renders %.0f vs %.0f; wall %s vs %s ms", d.renders.median(), base.renders.median(),
					num(d.wall.median()), num(base.wall.median())),
				"no gate: " + base.label,
				fmt.Sprintf("renders %s fewer; wall %s of baseline", ratio(base.renders.median()/d.renders.median()),
					ratio(d.wall.median()/base.wall.median())),
				"—"})
		}
	}
	return rows
}

// pickupRows are scenario 2's lines: the worker's default against asynq's
// 1 s poll, the 10 ms what-if, and the cross-check with real renders.
func (r *report) pickupRows() []row {
	var rows []row
	var fast, slow, whatIf *pickupResult
	for i := range r.pickups {
		switch r.pickups[i].kind {
		case "default":
			fast = &r.pickups[i]
		case "asynq":
			slow = &r.pickups[i]
		default:
			whatIf = &r.pickups[i]
		}
	}
	if fast != nil {
		b, rt := "—", "—"
		if slow != nil {
			b = "asynq 1s: " + slow.lat.pcts(" ms")
			rt = fmt.Sprintf("p50 %s · p99 %s", ratio(fast.lat.pct(50)/slow.lat.pct(50)), ratio(fast.lat.pct(99)/slow.lat.pct(99)))
		}
		rows = append(rows, row{"2", "enqueue → render start, 1 worker, " + fast.label, fast.lat.pcts(" ms"), b, rt,
			"p50 ≤ 150 ms — " + verdict(fast.lat.pct(50) <= 150)})
	}
	if slow != nil {
		rows = append(rows, row{"2", "enqueue → render start, 1 worker, " + slow.label, slow.lat.pcts(" ms"), "—", "—", "(baseline)"})
	}
	if whatIf != nil {
		rows = append(rows, row{"2", "enqueue → render start, 1 worker, " + whatIf.label, whatIf.lat.pcts(" ms"), "—", "—", "(baseline)"})
	}
	if len(r.pipeline.pickup) > 0 {
		rows = append(rows, row{"2", "↳ same, with real renders (the pipeline runs of 4)", r.pipeline.pickup.pcts(" ms"), "—", "—", "cross-check"})
	}
	return rows
}

// hitRows are scenario 3's lines: a cache hit end to end per fleet, split
// into its steps where middleware saw them.
func (r *report) hitRows() []row {
	var rows []row
	for _, h := range r.hits {
		rows = append(rows, row{"3", "cache hit end to end (enqueue → result), " + h.label, h.e2e.pcts(" ms"), "—", "—",
			"p99 ≤ 50 ms — " + verdict(h.e2e.pct(99) <= 50)})
		if len(h.pickup) > 0 {
			rows = append(rows,
				row{"3", "↳ of which queue pick-up (enqueue → handler start)", h.pickup.pcts(" ms"), "", "", ""},
				row{"3", "↳ of which handler (stat, page count, result write)", h.handler.pcts(" ms"), "", "", ""},
				row{"3", "↳ of which result seen by the client (2 ms poll)", h.observe.pcts(" ms"), "", "", ""})
		}
	}
	return rows
}

// pipelineRows are scenario 4's lines (pipeline against the bare tab) and
// scenario 6's (a long document with and without outline).
func (r *report) pipelineRows() []row {
	var rows []row
	if p := r.pipeline; len(p.bare) > 0 {
		med := p.pipe.median() / p.bare.median()
		rows = append(rows, row{"4", "pipeline: enqueue → worker → stored → result read (1 worker)", p.pipe.mmm(" ms"),
			"bare tab of a peer, same Chromium build, printing to nowhere: " + p.bare.mmm(" ms"),
			fmt.Sprintf("%s (per run %s)", ratio(med), ratios(p.pipe, p.bare).mmm("×")),
			"≤ 1.15× — " + verdict(med <= 1.15)})
		rows = append(rows, row{"4", "↳ Renderer.Render alone → io.Discard (isolation, guard, readiness)", p.raw.mmm(" ms"), "bare tab",
			ratio(p.raw.median() / p.bare.median()), "figures"})
		rows = append(rows, row{"4", "↳ render_ms reported by the worker (render + store)", p.renderMS.mmm(" ms"), "", "", ""})
	}
	if g := r.goSpec; len(g.ms) > 0 {
		rows = append(rows, row{"6", "Go spec (go_spec.html of the toolchain), outline on", fmt.Sprintf("pages %s, %s MB, render %s",
			countText(g.pages), num(g.bytes.median()/1e6), g.ms.mmm(" ms")),
			fmt.Sprintf("outline off: %s MB, render %s", num(g.plainBytes.median()/1e6), g.plainMS.mmm(" ms")),
			fmt.Sprintf("time %s · bytes %s", ratio(g.ms.median()/g.plainMS.median()), ratio(g.bytes.median()/g.plainBytes.median())),
			"figures"})
	}
	return rows
}

// sectionRows are the summary lines of the scenarios with results of
// their own, in the summary's order.
func (r *report) sectionRows() []row {
	var rows []row
	if r.distinct != nil {
		rows = append(rows, r.distinct.rows()...)
	}
	if r.capacity != nil {
		rows = append(rows, r.capacity.rows()...)
	}
	if r.delivery != nil {
		rows = append(rows, r.delivery.rows()...)
	}
	if r.fairness != nil {
		rows = append(rows, r.fairness.rows()...)
	}
	if r.costs != nil {
		rows = append(rows, r.costs.rows()...)
	}
	if r.docopts != nil {
		rows = append(rows, r.docopts.rows()...)
	}
	if r.manual != nil {
		rows = append(rows, r.manual.rows()...)
	}
	if r.idle != nil {
		rows = append(rows, r.idle.rows()...)
	}
	if r.links != nil {
		rows = append(rows, r.links.rows()...)
	}
	if r.compat != nil {
		rows = append(rows, r.compat.rows()...)
	}
	if r.gops != nil {
		rows = append(rows, r.gops.rows()...)
	}
	return rows
}

func (r *report) machineLines() []string {
	m := r.machine
	mode := fmt.Sprintf("%d runs per scenario", r.opts.runs)
	if r.opts.quick {
		mode = "QUICK mode (" + mode + ", fewer samples): a harness check, not figures to quote"
	}
	return []string{
		fmt.Sprintf("Machine: %d cores (%s), %.1f GB RAM, Linux %s", m.cores, m.cpu, m.memGB, m.kernel),
		fmt.Sprintf("Software: %s, %s, redis-server %s", m.goVersion, m.chromium, m.redis),
		fmt.Sprintf("Other work on the machine: CPU %s busy in 3 s before the run and %s in 3 s after it (benchmark idle); load average (1/5/15 min) at start %s, at end %s",
			pctText(m.busyStart), pctText(m.busyEnd), m.loadStart, m.loadEnd),
		fmt.Sprintf("Run: %s, %s; %s; total wall time %.0f s", r.started.Format("2006-01-02 15:04 MST"), r.opts.command, mode, r.total.Seconds()),
	}
}

func pctText(f float64) string {
	if f != f { // NaN
		return "?"
	}
	return fmt.Sprintf("%.0f %%", 100*f)
}

// busy reports whether other work used more than a fifth of the CPU just
// before or just after the run, while the benchmark itself was idle.
func (r *report) busy() bool {
	return r.machine.busyStart > 0.2 || r.machine.busyEnd > 0.2
}

// text is the report for the terminal.
func (r *report) text() string {
	var b strings.Builder
	for _, l := range r.machineLines() {
		b.WriteString(l + "\n")
	}
	if r.busy() {
		b.WriteString("WARNING: other work was using the CPU (see above); these figures are not representative.\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSCENARIO\tRESULT\tBASELINE (same run)\tRATIO\tTARGET")
	for _, x := range r.rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.id, x.what, x.result, x.baseline, x.ratio, x.target)
	}
	_ = tw.Flush()
	if r.goBench != nil {
		b.WriteString("\nGo benchmarks (median (min–max) over -count runs):\n")
		tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "5\tBENCHMARK\tITERATIONS\tMETRICS")
		for _, s := range r.goBench.summary() {
			fmt.Fprintf(tw, "5\t%s\t%s\t%s\n", s[0], s[1], s[2])
		}
		_ = tw.Flush()
	}
	return b.String()
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// markdown is BENCHMARKS.md: the current figures only. A run replaces the
// whole file; what earlier runs measured lives in its git history.
func (r *report) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Benchmarks\n\n")
	w("Generated by `make bench` (setup, build, then `%s`). Every ratio compares two figures measured ", strings.TrimSpace(r.opts.command))
	w("in the same run on the same machine; figures are medians with min–max over the runs, or percentiles ")
	w("over samples. Nothing here is asserted: `make bench` fails only when a scenario errors.\n\n")
	for _, l := range r.machineLines() {
		w("- %s\n", l)
	}
	if r.busy() {
		w("\n> **The machine was busy**: other work used the CPU around this run (see above) and competed for the\n")
		w("> %d cores, so these figures only show that the harness works. Re-run `make bench` on a quiet machine.\n", r.machine.cores)
	}
	w("\n## Summary\n\n")
	w("| # | scenario | result | baseline (same run) | ratio | target |\n|---|---|---|---|---|---|\n")
	for _, x := range r.rows() {
		w("| %s | %s | %s | %s | %s | %s |\n", x.id, mdCell(x.what), mdCell(x.result), mdCell(x.baseline), mdCell(x.ratio), mdCell(x.target))
	}
	for _, s := range r.sections() {
		w("%s", r.withRunLine(s))
	}
	w("\n%s", methodText(r))
	return b.String()
}

// section is one part of the report after the summary: the id its summary
// rows carry and its markdown, a "## " heading first.
type section struct {
	id, body string
}

// sections are the report's sections with results, in the report's order.
func (r *report) sections() []section {
	var s []section
	add := func(id string, present bool, body func() string) {
		if present {
			s = append(s, section{id, body()})
		}
	}
	add("7", r.distinct != nil, func() string { return r.distinct.markdown() })
	add("11", r.fairness != nil, func() string { return r.fairness.markdown() })
	add("10", r.costs != nil, func() string { return r.costs.markdown() })
	add("D", r.docopts != nil, func() string { return r.docopts.markdown() })
	add("M", r.manual != nil, func() string { return r.manual.markdown() })
	add("L", r.links != nil, func() string { return r.links.markdown() })
	add("G", r.compat != nil, func() string { return r.compat.markdown() })
	add("GO", r.gops != nil, func() string { return r.gops.markdown() })
	add("5", r.goBench != nil, func() string { return r.goBench.markdown() })
	return s
}

// withRunLine puts the run's line under the section's heading: when it
// was measured, by which command, and how its goals came out, so that a
// section copied into the file from a run of its own (-only) says so.
func (r *report) withRunLine(s section) string {
	heading, rest, ok := strings.Cut(strings.TrimPrefix(s.body, "\n"), "\n")
	if !ok {
		return s.body
	}
	return fmt.Sprintf("\n%s\n\n%s\n%s", heading, r.runLine(s.id), rest)
}

// runLine is a section's run and the tally of its goals in the summary.
func (r *report) runLine(id string) string {
	return fmt.Sprintf("*Run:* %s, `%s`. %s", r.started.UTC().Format("2006-01-02 15:04 MST"), r.opts.command, r.goals(id))
}

// goals counts the targets of the summary rows with id, met and not.
func (r *report) goals(id string) string {
	met, notMet := 0, 0
	for _, x := range r.rows() {
		switch {
		case x.id != id:
		case strings.Contains(x.target, "NOT met"):
			notMet++
		case strings.Contains(x.target, "met"):
			met++
		}
	}
	if met+notMet == 0 {
		return "No goal: figures."
	}
	return fmt.Sprintf("Goals (summary rows %s): %d met, %d not met.", id, met, notMet)
}

// methodText says how to reproduce the figures and what to trust in them;
// each section with a table of its own says how that table is measured.
func methodText(r *report) string {
	specPath := r.goSpec.path
	if specPath == "" {
		specPath = "$(go env GOROOT)/doc/go_spec.html"
	}
	return fmt.Sprintf(`## How the figures are taken

**To reproduce:** `+"`make bench`"+` (`+"`make setup build`"+`, then `+"`go run ./bench`"+`).
`+"`go run ./bench -only KEYS -out /tmp/part.md`"+` runs some scenarios (%[1]s); copy their summary rows and
sections, run lines included, into this file. `+"`-gotenberg URL`"+` adds a real Gotenberg 8 started by hand on
loopback (7G, G, M); `+"`-quick`"+` checks the harness, its figures are not to quote.

**What to trust.** Everything runs against a private redis-server on a free loopback port and file storage in a
temporary folder, all stopped on success, error or Ctrl-C; a scenario that errors leaves this file untouched.
Workers run the production defaults (`+"`WORKER_CONCURRENCY=8`"+`, `+"`RENDER_CONCURRENCY=2`"+`,
`+"`TASK_CHECK_INTERVAL=%[2]s`"+` with the doorbell, one Chromium per worker) and every Chromium renders once before
measuring. Requests go through the public `+"`exportclient`"+`; every measured export names a fresh version (nothing
stored yet) unless a cache hit is measured. Every baseline runs in the same run, interleaved with what it is compared
with, so a drift in the machine's speed hits both: compare ratios, and figures only within a section. Expect ±10 %%
between runs on 2 cores. The header says how busy the machine was; a busy run says so at the top.

**What each scenario without a section measures** (%[3]d runs each unless said; the standard document is
%[4]s, the sample manual, inline, waiting for `+"`window.__PDF_READY__===true`"+`):

- **1** K=%[5]d requests for one fresh artifact at once on %[6]d workers (bin/worker; in process with and without the
  gate): renders counted by the workers' own metrics, wall from the first enqueue to the last result seen, against
  one export on the same fleet.
- **2** enqueue → the handler calling `+"`Renderer.Render`"+` (a stub), one in-process worker, requests at random
  phases of its poll: the doorbell against asynq's 1 s poll and a 10 ms poll.
- **3** a cache hit from enqueue to the client seeing the result (polled every 2 ms), split in process by middleware.
- **4** one export through the pipeline (enqueue → stored → result read) against the bare tab of a peer
  (`+"`bench/peer`"+`: a tab in one shared Chromium of the same build, the PDF into `+"`io.Discard`"+`); median / median.
- **6** %[7]s with `+"`outline: true`"+` (tagged) against the same without, on a warm renderer.
- **8** Redis bytes per export (`+"`MEMORY USAGE`"+` summed over the database), pending and completed, of the Go
  specification as inline HTML, the document beside the task against inside it; enqueue of 2 MiB.
- **9** cache hits through the CLI process against a bare asynq client polling every 50 ms; completion → client
  through the HTTP long-poll, a GET every 100 ms, and `+"`exportclient.Wait`"+`.
- **12** Redis commands/s and CPU of 1 and 10 idle worker processes (stub renderer), pick-up after 1–2 s of idle,
  and under Poisson arrivals at 40/s: the doorbell against asynq's 1 s poll and a 10 ms poll.
`, scenarioKeys(), defaultCheckInterval, r.opts.runs, r.opts.manual, r.opts.k, r.opts.workers, "`"+specPath+"`")
}
