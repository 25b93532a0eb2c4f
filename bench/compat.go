package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// ── Section G: Gotenberg's routes on bin/api, against the real Gotenberg ──
//
// The same client requests go to POST /forms/chromium/convert/html of
// bin/api (one bin/worker behind it) and, with -gotenberg, of the real
// Gotenberg: (a) distinct documents by two closed-loop clients, (b) ten
// identical conversions at once, (c) an identical repeat. CPU is each
// system's process trees (bin/api, bin/worker with its Chromium, Redis;
// Gotenberg's tree).

// compatClients is (a)'s closed-loop client count, and compatDistinct its
// documents per system.
const (
	compatClients  = 2
	compatDistinct = 24
	compatSame     = 10
	compatRepeats  = 5
)

// compatSystem is one system of section G: where its route is and the CPU
// its processes have used.
type compatSystem struct {
	name string
	g    *gotenbergServer
	pids []int // the process trees whose CPU is the system's
}

// metered starts a treeMeter on each of the system's trees; the function
// it returns ends them and gives their CPU seconds together.
func (s compatSystem) metered() func() float64 {
	meters := make([]*treeMeter, len(s.pids))
	for i, pid := range s.pids {
		meters[i] = startTreeMeter(pid, treeMeterEvery)
	}
	return func() float64 {
		var sum float64
		for _, m := range meters {
			sum += m.seconds()
		}
		return sum
	}
}

// compatRow is one system's figures.
type compatRow struct {
	system                    string
	distinctWall, distinctCPU float64 // (a) seconds, CPU-seconds
	sameWall, sameCPU         float64 // (b)
	repeatMS                  []float64
}

type compatResult struct {
	doc     string
	systems []compatRow
}

func scenarioCompat(ctx context.Context, e *benchEnv, rep *report) error {
	f, err := startBinaryFleet(ctx, e, "compat", 1)
	if err != nil {
		return err
	}
	defer f.stop()
	addr := freeAddr()
	if addr == "" {
		return fmt.Errorf("no free port")
	}
	api, err := harness.Start("compat-api", filepath.Join(f.dir, "api.log"), filepath.Join(e.o.bin, "api"),
		append(slices.Clone(f.env), "API_ADDR="+addr, "LOG_LEVEL=warn"))
	if err != nil {
		return err
	}
	defer api.Kill()
	if err := waitReady(ctx, "http://"+addr+"/healthz", api, 30*time.Second); err != nil {
		return err
	}
	pids := []int{api.PID(), e.redis.Proc.PID()}
	for _, p := range f.procs {
		pids = append(pids, p.PID())
	}
	ours := compatSystem{name: "pdfexport (bin/api + 1 bin/worker)", g: &gotenbergServer{base: "http://" + addr, http: &http.Client{Timeout: 2 * time.Minute}},
		pids: pids}
	systems := []compatSystem{ours}
	g, err := gotenbergFromFlags(ctx)
	if err != nil {
		return err
	}
	if g != nil {
		systems = append(systems, compatSystem{name: sysGotenberg + " " + g.version, g: g, pids: []int{g.pid}})
	}
	res := &compatResult{doc: fmt.Sprintf("the standard document (%d KiB of HTML)", len(e.manual)>>10)}
	fields := gotenbergPrintFields(spec.Options{}) // section 7's print settings
	tag := freshVersion("g")
	for _, s := range systems {
		doc := func(i int) string { return e.manual + "<!-- " + tag + " " + strconv.Itoa(i) + " -->" }
		// Warm-up, not counted: a cold renderer on either side.
		if _, err := s.g.convertHTML(ctx, doc(-1), fields, io.Discard); err != nil {
			return fmt.Errorf("%s warm-up: %w", s.name, err)
		}
		row := compatRow{system: s.name}
		cpu := s.metered()
		row.distinctWall, err = closedLoop(ctx, compatClients, 1, compatDistinct, func(ctx context.Context, i int) error {
			_, err := s.g.convertHTML(ctx, doc(i), fields, io.Discard)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s distinct: %w", s.name, err)
		}
		row.distinctCPU = cpu()
		same := doc(1000)
		cpu = s.metered()
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, compatSame)
		for i := range compatSame {
			wg.Go(func() { _, errs[i] = s.g.convertHTML(ctx, same, fields, io.Discard) })
		}
		wg.Wait()
		row.sameWall, row.sameCPU = time.Since(t0).Seconds(), cpu()
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("%s identical: %w", s.name, err)
			}
		}
		for range compatRepeats {
			t0 := time.Now()
			if _, err := s.g.convertHTML(ctx, same, fields, io.Discard); err != nil {
				return fmt.Errorf("%s repeat: %w", s.name, err)
			}
			row.repeatMS = append(row.repeatMS, float64(time.Since(t0).Microseconds())/1000)
		}
		logf("   %s: %d distinct in %.2f s (%.2f CPU-s); %d identical in %.2f s; repeat p50 %.1f ms",
			s.name, compatDistinct, row.distinctWall, row.distinctCPU, compatSame, row.sameWall, median(row.repeatMS))
		res.systems = append(res.systems, row)
	}
	renders, err := f.metric(ctx, metricRendersOK)
	if err == nil {
		logf("   bin/worker renders: %v (warm-up, %d distinct, 1 for the %d identical)", renders, compatDistinct, compatSame)
	}
	rep.compat = res
	return nil
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// rows are section G's summary lines: the three targets, met or
// not, when the real Gotenberg ran beside.
func (r *compatResult) rows() []row {
	if len(r.systems) == 0 {
		return nil
	}
	o := r.systems[0]
	if len(r.systems) < 2 {
		return []row{{"G", "Gotenberg's HTML route on bin/api (no -gotenberg: no baseline)",
			fmt.Sprintf("%.2f docs/s distinct; %d identical in %.2f s; repeat %.1f ms", compatDistinct/o.distinctWall, compatSame, o.sameWall, median(o.repeatMS)),
			"—", "", "run with -gotenberg for the targets"}}
	}
	g := r.systems[1]
	tput := (compatDistinct / o.distinctWall) / (compatDistinct / g.distinctWall)
	wall := o.sameWall / g.sameWall
	repeat := median(g.repeatMS) / median(o.repeatMS)
	return []row{
		{"G", "distinct HTML conversions through the Gotenberg route, 2 clients",
			fmt.Sprintf("%.2f docs/s, %.2f CPU-s/doc", compatDistinct/o.distinctWall, o.distinctCPU/compatDistinct),
			fmt.Sprintf("Gotenberg %.2f docs/s, %.2f CPU-s/doc", compatDistinct/g.distinctWall, g.distinctCPU/compatDistinct),
			fmt.Sprintf("%.2f×", tput), "≥ 1.15× — " + verdict(tput >= 1.15)},
		{"G", "10 identical concurrent conversions: wall",
			fmt.Sprintf("%.2f s, %.2f CPU-s", o.sameWall, o.sameCPU), fmt.Sprintf("Gotenberg %.2f s, %.2f CPU-s", g.sameWall, g.sameCPU),
			fmt.Sprintf("%.2f×", wall), "≤ 0.2× — " + verdict(wall <= 0.2)},
		{"G", "an identical repeat: latency p50",
			fmt.Sprintf("%.1f ms", median(o.repeatMS)), fmt.Sprintf("Gotenberg %.1f ms", median(g.repeatMS)),
			fmt.Sprintf("%.1f× faster", repeat), "≥ 10× — " + verdict(repeat >= 10)},
	}
}

func (r *compatResult) markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("\n## G. Gotenberg's routes on bin/api against the real Gotenberg\n\n")
	w("The same requests to `POST /forms/chromium/convert/html` of bin/api (one bin/worker behind it, file storage) and, ")
	w("with `-gotenberg`, of a real Gotenberg 8 on the same machine: %s with the pipeline's print fields, ", r.doc)
	w("(a) %d distinct documents by %d closed-loop clients, (b) %d identical conversions at once, (c) the identical ", compatDistinct, compatClients, compatSame)
	w("document again, %d times in a row. CPU-seconds are each system's process trees (bin/api, bin/worker and its ", compatRepeats)
	w("Chromium, Redis; Gotenberg's tree), beside wall time.\n\n")
	w("| system | (a) wall | (a) docs/s | (a) CPU-s/doc | (b) wall | (b) CPU-s | (c) p50 |\n|---|---|---|---|---|---|---|\n")
	for _, row := range r.systems {
		w("| %s | %.2f s | %.2f | %.2f | %.2f s | %.2f | %.1f ms |\n", row.system, row.distinctWall, compatDistinct/row.distinctWall,
			row.distinctCPU/compatDistinct, row.sameWall, row.sameCPU, median(row.repeatMS))
	}
	if len(r.systems) < 2 {
		w("\nNo real Gotenberg ran beside (start one on loopback and pass `-gotenberg URL`): the targets need it.\n")
	}
	return b.String()
}
