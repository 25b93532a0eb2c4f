package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// sampleReport is a report of a full run with a result in the summary-only
// scenarios and in most sections, the figures made up.
func sampleReport() *report {
	ms := func(v ...float64) dist { return dist(v) }
	r := &report{
		opts:    options{runs: 5, k: 20, workers: 3, manual: "examples/manual.html", command: "go run ./bench"},
		started: time.Date(2026, 12, 1, 17, 48, 0, 0, time.UTC),
		total:   1305 * time.Second,
		machine: machine{cores: 2, cpu: "AMD EPYC", memGB: 23.5, kernel: "6.18", goVersion: "go1.26", chromium: "Chromium 156", redis: "7.0.15"},
		dedup: []dedupResult{
			{label: "3 worker processes (bin/worker), gate", k: 20, single: ms(330, 340), wall: ms(370, 380), renders: ms(1, 1), renderMS: ms(320, 330), failOpen: ms(0, 0)},
			{label: "3 in-process workers, no gate (baseline)", baseline: true, k: 20, single: ms(390, 380), wall: ms(4000, 4100), renders: ms(20, 20), renderMS: ms(3900, 4000)},
		},
		pickups: []pickupResult{
			{kind: "default", label: "worker default (doorbell)", lat: ms(5, 6, 26)},
			{kind: "asynq", label: "asynq default TaskCheckInterval (1s), no doorbell", lat: ms(418, 900, 1228)},
		},
		hits:     []hitResult{{label: "1 in-process worker", e2e: ms(10, 22), pickup: ms(7, 14), handler: ms(1, 2), observe: ms(1, 4)}},
		pipeline: pipelineResult{bare: ms(412, 420), raw: ms(339, 340), pipe: ms(347, 350), renderMS: ms(331, 332), pickup: ms(4, 9)},
		goSpec:   goSpecResult{path: "/usr/local/go/doc/go_spec.html", ms: ms(452, 460), pages: ms(50, 50), bytes: ms(1.7e6, 1.7e6), plainMS: ms(329, 330), plainBytes: ms(0.5e6, 0.5e6)},
		docopts: &docoptsResult{pages: 50, samples: 2, variants: []docoptsFigures{
			{label: "plain (streamed)", cpu: ms(0.84, 0.9), wall: ms(637, 650), heap: ms(10, 11), bytes: ms(1.63, 1.63)},
			{label: "metadata", cpu: ms(1.05, 1.1), wall: ms(873, 880), heap: ms(38, 39), bytes: ms(1.58, 1.58)},
		}},
		links: &linksResult{pdfBytes: 256 << 10, readers: 8, roundFor: 4 * time.Second, postCmds: 1, postQueuedCmds: 5, postMS: ms(0.19, 2.2), postCPUPer1k: 0.14,
			variants: []linkFigures{
				{label: "Go http.FileServer, same file (the limit)", rps: ms(5938, 5900), lat: ms(0.8, 10.6), cpuPer1k: ms(0.059, 0.06)},
				{label: "bin/api, public link", rps: ms(6871, 6800), lat: ms(0.88, 5.4), cpuPer1k: ms(0.067, 0.07)},
			}},
		compat: &compatResult{doc: "the standard document", systems: []compatRow{
			{system: "pdfexport (bin/api + 1 bin/worker)", distinctWall: 6.91, distinctCPU: 10.6, sameWall: 0.48, sameCPU: 0.57, repeatMS: []float64{4.6}},
			{system: "Gotenberg 8 (real)", distinctWall: 8.44, distinctCPU: 14.2, sameWall: 3.82, sameCPU: 6.40, repeatMS: []float64{569.4}},
		}},
		goBench: &goBenchResult{
			cmds:  []string{"go test -run '^$' -bench WakeLatency -benchtime 30x ./internal/lock"},
			order: []string{"lock.WakeLatency/pubsub"},
			lines: map[string][]benchRun{"lock.WakeLatency/pubsub": {{iters: 30, units: []string{"ns/op"}, values: map[string]float64{"ns/op": 789675}}}},
		},
	}
	return r
}

// TestMarkdown_CurrentFiguresOnly: BENCHMARKS.md is the run's figures and
// how to reproduce them, nothing of earlier runs, each section under a
// line saying which run measured it and how its goals came out.
func TestMarkdown_CurrentFiguresOnly(t *testing.T) {
	md := sampleReport().markdown()
	lines := strings.Split(md, "\n")
	for _, tc := range []struct {
		name string
		ok   func() bool
	}{
		{"opens with the title and the summary", func() bool {
			return strings.HasPrefix(md, "# Benchmarks\n") && strings.Index(md, "\n## Summary\n") < strings.Index(md, "\n## D. ")
		}},
		{"ends with how the figures are taken", func() bool {
			i := strings.Index(md, "\n## How the figures are taken\n")
			return i > 0 && !strings.Contains(md[i+1:], "\n## ")
		}},
		{"no earlier measurements", func() bool { return !strings.Contains(md, "Earlier") && !strings.Contains(md, "earlier run") }},
		{"no raw go test output", func() bool { return !strings.Contains(md, "<details>") && !strings.Contains(md, "goos:") }},
		{"at most 400 lines", func() bool { return len(lines) <= 400 }},
		{"the method is short", func() bool {
			return len(strings.Split(md[strings.Index(md, "## How the figures are taken"):], "\n")) <= 40
		}},
		{"every section says its run", func() bool {
			for i, l := range lines {
				if strings.HasPrefix(l, "## ") && l != "## Summary" && l != "## How the figures are taken" {
					if i+2 >= len(lines) || !strings.HasPrefix(lines[i+2], "*Run:* 2026-12-01 17:48 UTC, `go run ./bench`. ") {
						return false
					}
				}
			}
			return true
		}},
		{"a section's goals are tallied", func() bool {
			return strings.Contains(md, "Goals (summary rows G): 3 met, 0 not met.") && strings.Contains(md, "Goals (summary rows D): 1 met, 0 not met.")
		}},
		{"a section of figures says it has no goal", func() bool {
			return strings.Contains(md, "## 5. Lock, render and tracing Go benchmarks\n\n*Run:* 2026-12-01 17:48 UTC, `go run ./bench`. No goal: figures.\n")
		}},
		{"the summary keeps every scenario", func() bool {
			for _, id := range []string{"1", "2", "3", "4", "6", "D", "L", "G"} {
				if !strings.Contains(md, "\n| "+id+" | ") {
					return false
				}
			}
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok() {
				t.Errorf("BENCHMARKS.md of a sample run (%d lines):\n%s", len(lines), md)
			}
		})
	}
}

// TestGoals_CountsVerdicts: a row's verdict counts once, "NOT met" as
// not met.
func TestGoals_CountsVerdicts(t *testing.T) {
	r := sampleReport()
	r.pipeline.pipe = dist{500, 500} // 1.2× the bare tab: the ≤ 1.15× goal fails
	for _, tc := range []struct{ id, want string }{
		{"4", "Goals (summary rows 4): 0 met, 1 not met."},
		{"1", "Goals (summary rows 1): 1 met, 0 not met."},
		{"6", "No goal: figures."},
	} {
		if got := r.goals(tc.id); got != tc.want {
			t.Errorf("goals(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestBenchmarksFile_CurrentFiguresOnly: the committed BENCHMARKS.md has
// the writer's shape, whether written by a run or spliced from several:
// at most 400 lines, no earlier measurements, a run line under every
// section's heading.
func TestBenchmarksFile_CurrentFiguresOnly(t *testing.T) {
	b, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	lines := strings.Split(md, "\n")
	if len(lines) > 400 {
		t.Errorf("BENCHMARKS.md has %d lines, want at most 400", len(lines))
	}
	if strings.Contains(md, "Earlier") || strings.Contains(md, "<details>") {
		t.Errorf("BENCHMARKS.md keeps earlier measurements or raw output")
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "## ") || l == "## Summary" || l == "## How the figures are taken" {
			continue
		}
		if i+2 >= len(lines) || !strings.HasPrefix(lines[i+2], "*Run:* ") {
			t.Errorf("section %q has no run line under its heading", l)
		}
	}
}
