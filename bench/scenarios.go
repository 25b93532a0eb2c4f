package main

import (
	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/render/chromium"

	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Poll intervals of the benchmark's client. Finer than the CLI's 50 ms so
// that observing a result adds at most this much to a measurement.
const (
	pollOne  = 2 * time.Millisecond  // one request in flight
	pollMany = 10 * time.Millisecond // a burst of K
)

// rawRender renders src with r straight into io.Discard (or a buffer with
// keep) and times the call: the "raw Chromium" baseline.
func rawRender(ctx context.Context, r *render.Renderer, src render.Source, s spec.PrintSettings, keep bool) (time.Duration, render.Stats, []byte, error) {
	var buf bytes.Buffer
	var n int64
	start := time.Now()
	st, err := r.Render(ctx, src, s, func(_ context.Context, pdf io.Reader) error {
		var w io.Writer = io.Discard
		if keep {
			w = &buf
		}
		var cerr error
		n, cerr = io.Copy(w, pdf)
		return cerr
	})
	d := time.Since(start)
	if err == nil && st.Bytes == 0 {
		st.Bytes = n
	}
	return d, st, buf.Bytes(), err
}

// scenarioSingleWorker: one in-process worker with a real Chromium.
// Pipeline overhead (4) alternates raw renders with exports through the
// queue; the Go specification (6) is rendered on the same renderer; the
// cache-hit breakdown (3) re-requests a stored artifact.
func scenarioSingleWorker(ctx context.Context, e *benchEnv, rep *report) error {
	f, err := startInProcFleet(ctx, e, "single", 1, workerSpec{})
	if err != nil {
		return err
	}
	defer f.stop()
	s := &singleWorker{ctx: ctx, e: e, f: f, r: f.workers[0].Chromium(), src: render.Source{HTML: e.manual},
		settings: settingsOf(e.manualRequest("x").Options)}
	if err := s.warmUp(); err != nil {
		return err
	}
	// The baseline of the pipeline overhead: the peer's bare tab on the
	// Chromium build the worker runs, printing the same document with the
	// same settings and wait_for. It stays up to the end of the scenario.
	workerChromium, err := chromium.Find()
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		workerChromium, err = p, nil
	}
	if err != nil {
		return err
	}
	if s.bare, err = peer.Start(ctx, workerChromium); err != nil {
		return err
	}
	defer s.bare.Close()
	pipeline, err := s.pipelineOverhead()
	if err != nil {
		return err
	}
	rep.pipeline = pipeline
	gs, err := s.goSpec()
	if err != nil {
		return err
	}
	rep.goSpec = gs
	hit, err := s.cacheHits()
	if err != nil {
		return err
	}
	rep.hits = append(rep.hits, hit)
	return nil
}

// singleWorker is one run of scenario single: the fleet of one worker,
// its renderer, the bare tab beside it and the standard document.
type singleWorker struct {
	ctx      context.Context
	e        *benchEnv
	f        *fleet
	r        *render.Renderer
	bare     *peer.Browser
	src      render.Source
	settings spec.PrintSettings
	hitReq   exportclient.Request // an export stored in the warm-up
}

// warmUp (not counted): the first render opens Chromium's renderer
// process, the first export loads the lock scripts. The manual's PDF is
// kept for the stub renderer of the pick-up scenario.
func (s *singleWorker) warmUp() error {
	e := s.e
	_, st, pdf, err := rawRender(s.ctx, s.r, s.src, s.settings, true)
	if err != nil {
		return fmt.Errorf("warm-up render: %w", err)
	}
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) || st.Pages < 1 {
		return fmt.Errorf("%w: warm-up render gave %d bytes, %d pages, not a PDF", errScenario, len(pdf), st.Pages)
	}
	e.manualPDF, e.manualPages = pdf, st.Pages
	logf("   standard document: %s, %d pages, %d bytes", e.o.manual, st.Pages, len(pdf))
	s.hitReq = e.manualRequest(freshVersion("hit"))
	if _, err := s.f.export(s.ctx, s.hitReq, pollOne); err != nil {
		return fmt.Errorf("warm-up export: %w", err)
	}
	return nil
}

// pipelineOverhead (4): the bare tab, the Renderer alone and an export
// through the queue, in rotating order, -runs of each.
func (s *singleWorker) pipelineOverhead() (pipelineResult, error) {
	ctx, e, f := s.ctx, s.e, s.f
	var p pipelineResult
	params := render.PrintParams(s.settings)
	if _, err := s.bare.Print(ctx, e.manual, s.settings.WaitFor, params, io.Discard); err != nil {
		return p, fmt.Errorf("warm-up of the bare tab: %w", err)
	}
	doBare := func() error {
		t0 := time.Now()
		n, err := s.bare.Print(ctx, e.manual, s.settings.WaitFor, params, io.Discard)
		if err != nil {
			return fmt.Errorf("bare tab: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("%w: the bare tab printed nothing", errScenario)
		}
		p.bare = append(p.bare, msOf(time.Since(t0)))
		return nil
	}
	doRaw := func() error {
		d, st, _, err := rawRender(ctx, s.r, s.src, s.settings, false)
		if err != nil {
			return fmt.Errorf("raw render: %w", err)
		}
		if st.Pages != e.manualPages {
			return fmt.Errorf("%w: raw render gave %d pages, want %d", errScenario, st.Pages, e.manualPages)
		}
		p.raw = append(p.raw, msOf(d))
		return nil
	}
	doPipe := func() error {
		req, err := f.export(ctx, e.manualRequest(freshVersion("pipe")), pollOne)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		if !req.res.Rendered || req.res.Pages != e.manualPages {
			return fmt.Errorf("%w: export result %+v: want rendered, %d pages", errScenario, req.res, e.manualPages)
		}
		p.pipe = append(p.pipe, msOf(req.e2e()))
		p.renderMS = append(p.renderMS, float64(req.res.RenderMS))
		if t, ok := f.rec.get(f.rec.renderStart, req.id); ok {
			p.pickup = append(p.pickup, msOf(t.Sub(req.enq)))
		}
		return nil
	}
	// Rotate the order so that no design always runs first.
	steps := []func() error{doBare, doRaw, doPipe}
	for i := range e.o.runs {
		for j := range steps {
			if err := steps[(i+j)%len(steps)](); err != nil {
				return p, err
			}
		}
	}
	logf("   pipeline %s vs bare tab %s (Renderer alone %s)", p.pipe.mmm(" ms"), p.bare.mmm(" ms"), p.raw.mmm(" ms"))
	return p, nil
}

// goSpec (6): the Go specification with an outline (the figure asked
// for) and, as its baseline, without, on the same renderer.
func (s *singleWorker) goSpec() (goSpecResult, error) {
	specHTML, specPath, err := goSpecHTML(s.ctx)
	if err != nil {
		return goSpecResult{}, err
	}
	gs := goSpecResult{path: specPath, htmlBytes: len(specHTML)}
	for range min(s.e.o.runs, 3) {
		for _, outline := range []bool{true, false} {
			d, st, _, err := rawRender(s.ctx, s.r, render.Source{HTML: specHTML}, spec.Options{Outline: outline}.Settings(), false)
			if err != nil {
				return gs, fmt.Errorf("rendering %s: %w", specPath, err)
			}
			if st.Pages < 1 || st.Bytes < 1 {
				return gs, fmt.Errorf("%w: %s rendered to %d pages, %d bytes", errScenario, specPath, st.Pages, st.Bytes)
			}
			if outline {
				gs.ms, gs.pages, gs.bytes = append(gs.ms, msOf(d)), append(gs.pages, float64(st.Pages)), append(gs.bytes, float64(st.Bytes))
			} else {
				gs.plainMS, gs.plainBytes = append(gs.plainMS, msOf(d)), append(gs.plainBytes, float64(st.Bytes))
			}
		}
	}
	logf("   go spec with outline: %s pages, %s bytes, %s; without: %s", gs.pages.mmm(""), gs.bytes.mmm(""), gs.ms.mmm(" ms"), gs.plainMS.mmm(" ms"))
	return gs, nil
}

// cacheHits (3b): a cache hit through the one in-process worker, broken
// down by its middleware's times.
func (s *singleWorker) cacheHits() (hitResult, error) {
	f := s.f
	hit := hitResult{label: "1 in-process worker"}
	for range s.e.o.hitN {
		if err := sleepCtx(s.ctx, rand.N(100*time.Millisecond)); err != nil {
			return hit, err
		}
		req, err := f.export(s.ctx, s.hitReq, pollOne)
		if err != nil {
			return hit, fmt.Errorf("cache-hit export: %w", err)
		}
		if req.res.Rendered || req.res.Pages != s.e.manualPages {
			return hit, fmt.Errorf("%w: cache hit result %+v: want reused, %d pages", errScenario, req.res, s.e.manualPages)
		}
		hs, ok1 := f.rec.get(f.rec.handlerStart, req.id)
		he, ok2 := f.rec.get(f.rec.handlerEnd, req.id)
		if !ok1 || !ok2 {
			return hit, fmt.Errorf("%w: no handler times recorded for task %s", errScenario, req.id)
		}
		hit.e2e = append(hit.e2e, msOf(req.e2e()))
		hit.pickup = append(hit.pickup, msOf(hs.Sub(req.enq)))
		hit.handler = append(hit.handler, msOf(he.Sub(hs)))
		hit.observe = append(hit.observe, msOf(req.done.Sub(he)))
	}
	logf("   cache hit e2e %s", hit.e2e.pcts(" ms"))
	return hit, nil
}

// goSpecHTML wraps $(go env GOROOT)/doc/go_spec.html (a page body with a
// JSON front matter comment) into a document with a title, unchanged otherwise.
func goSpecHTML(ctx context.Context) (string, string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOROOT: %w", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "doc", "go_spec.html")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("the Go specification ships with the toolchain: %w", err)
	}
	return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>The Go Programming Language Specification</title></head><body>
<h1>The Go Programming Language Specification</h1>
` + string(b) + "\n</body></html>\n", path, nil
}

// scenarioPickup (2): enqueue → the handler calling Render, on one
// in-process worker, at the worker's default (the doorbell, polling every
// TASK_CHECK_INTERVAL besides), at asynq's default (a 1s poll, no doorbell)
// and at the previous default (a 10ms poll, no doorbell). Requests arrive at
// random times (uniform gaps up to the poll interval, or 100ms with the
// doorbell), so they land at random phases of the worker's poll. The render
// is a stub replaying the manual's recorded PDF: the measurement ends when
// the render begins, and scenario 4 covers the render itself.
func scenarioPickup(ctx context.Context, e *benchEnv, rep *report) error {
	if e.manualPDF == nil {
		return errors.New("no recorded PDF (the single-worker scenario records it)")
	}
	stub := &stubRenderer{pdf: e.manualPDF, pages: e.manualPages}
	for _, s := range []struct {
		kind     string
		label    string
		ws       workerSpec
		n        int
		interval time.Duration // the poll's
		gap      time.Duration // the longest pause between requests
	}{
		{"default", "worker default (doorbell, TASK_CHECK_INTERVAL=" + defaultCheckInterval.String() + ")", workerSpec{stub: stub}, e.o.pickN, defaultCheckInterval, 100 * time.Millisecond},
		{"asynq", "asynq default TaskCheckInterval (1s), no doorbell", workerSpec{stub: stub, asynqDefault: true, noDoorbell: true}, e.o.pickSlowN, time.Second, time.Second},
		{"whatif", "TASK_CHECK_INTERVAL=10ms, no doorbell (the previous default)", workerSpec{stub: stub, checkInterval: 10 * time.Millisecond, noDoorbell: true}, e.o.pickN / 2, 10 * time.Millisecond, 10 * time.Millisecond},
	} {
		f, err := startInProcFleet(ctx, e, "pickup-"+s.kind, 1, s.ws)
		if err != nil {
			return err
		}
		lat, err := pickupSamples(ctx, e, f, s.n, s.interval, s.gap)
		f.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
		rep.pickups = append(rep.pickups, pickupResult{kind: s.kind, label: s.label, interval: s.interval, lat: lat})
		logf("   %s: %s", s.label, lat.pcts(" ms"))
	}
	return nil
}

func pickupSamples(ctx context.Context, e *benchEnv, f *fleet, n int, interval, gap time.Duration) (dist, error) {
	// Let the worker's poll loop reach its steady state.
	if err := sleepCtx(ctx, 2*interval); err != nil {
		return nil, err
	}
	reqs := make([]*request, 0, n)
	for range n {
		if err := sleepCtx(ctx, rand.N(gap)); err != nil {
			return nil, err
		}
		r, err := f.enqueue(ctx, e.manualRequest(freshVersion("pick")))
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, r)
	}
	if err := f.await(ctx, reqs, pollMany, 2*time.Minute); err != nil {
		return nil, err
	}
	var lat dist
	for _, r := range reqs {
		t, ok := f.rec.get(f.rec.renderStart, r.id)
		if !ok || !r.res.Rendered {
			return nil, fmt.Errorf("%w: task %s did not render (%+v)", errScenario, r.id, r.res)
		}
		lat = append(lat, msOf(t.Sub(r.enq)))
	}
	return lat, nil
}

// scenarioDedupInProcess (1): K duplicates on in-process workers, with the
// gate and with the no-gate baseline, otherwise identical.
func scenarioDedupInProcess(ctx context.Context, e *benchEnv, rep *report) error {
	for _, v := range []struct {
		label string
		name  string
		ws    workerSpec
	}{
		{fmt.Sprintf("%d in-process workers, gate", e.o.workers), "dedup-gate", workerSpec{}},
		{fmt.Sprintf("%d in-process workers, no gate (baseline)", e.o.workers), "dedup-nogate", workerSpec{noGate: true}},
	} {
		f, err := startInProcFleet(ctx, e, v.name, e.o.workers, v.ws)
		if err != nil {
			return err
		}
		res, err := func() (dedupResult, error) {
			defer f.stop()
			// Warm every Chromium with one render (not counted).
			var wg sync.WaitGroup
			errs := make([]error, len(f.workers))
			for i, w := range f.workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, _, errs[i] = rawRender(ctx, w.Chromium(), render.Source{HTML: e.manual}, settingsOf(e.manualRequest("x").Options), false)
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return dedupResult{}, fmt.Errorf("warm-up: %w", err)
			}
			counter := func(context.Context) (int, int, error) {
				return int(f.rec.renders.Load()), int(f.rec.failOpen.Load()), nil
			}
			return dedupRuns(ctx, e, f, v.label, v.ws.noGate, counter)
		}()
		if err != nil {
			return fmt.Errorf("%s: %w", v.label, err)
		}
		rep.dedup = append(rep.dedup, res)
	}
	return nil
}

// dedupRuns measures, per run, one export of a fresh artifact and then K
// concurrent requests for another fresh artifact on fleet f.
func dedupRuns(ctx context.Context, e *benchEnv, f *fleet, label string, baseline bool, counters func(context.Context) (renders, failOpen int, err error)) (dedupResult, error) {
	res := dedupResult{label: label, baseline: baseline, k: e.o.k}
	runs := e.o.runs
	if baseline {
		runs = min(runs, 3) // K full renders per run; its median is stable at 3
	}
	for range runs {
		one, err := f.export(ctx, e.manualRequest(freshVersion("one")), pollMany)
		if err != nil {
			return res, fmt.Errorf("single export: %w", err)
		}
		if !one.res.Rendered {
			return res, fmt.Errorf("%w: single export of a fresh artifact did not render: %+v", errScenario, one.res)
		}
		before, foBefore, err := counters(ctx)
		if err != nil {
			return res, err
		}
		reqs, wall, err := f.burst(ctx, e.manualRequest(freshVersion("dup")), e.o.k, pollMany)
		if err != nil {
			return res, fmt.Errorf("%d duplicates: %w", e.o.k, err)
		}
		after, foAfter, err := counters(ctx)
		if err != nil {
			return res, err
		}
		flagged, renderMS := 0, int64(0)
		for _, r := range reqs {
			if r.res.ArtifactKey != reqs[0].res.ArtifactKey || r.res.Pages != e.manualPages || r.res.Bytes <= 0 {
				return res, fmt.Errorf("%w: result %+v differs from %+v (want %d pages)", errScenario, r.res, reqs[0].res, e.manualPages)
			}
			if r.res.Rendered {
				flagged++
			}
			renderMS = max(renderMS, r.res.RenderMS)
		}
		res.single = append(res.single, msOf(one.e2e()))
		res.wall = append(res.wall, msOf(wall))
		res.renders = append(res.renders, float64(after-before))
		res.flagged = append(res.flagged, float64(flagged))
		res.renderMS = append(res.renderMS, float64(renderMS))
		res.failOpen = append(res.failOpen, float64(foAfter-foBefore))
		first, last := reqs[0].done, reqs[0].done
		for _, r := range reqs {
			first, last = minTime(first, r.done), maxTime(last, r.done)
		}
		logf("   %s: %d requests → %d renders (%d results rendered:true, %d fail-open), wall %.0f ms (first seen done to last %.0f ms); one export %.0f ms",
			label, e.o.k, after-before, flagged, foAfter-foBefore, msOf(wall), msOf(last.Sub(first)), msOf(one.e2e()))
		if !baseline && after-before != 1 {
			e.keepWork.Store(true)
			logf("   %s: %d renders for one artifact; worker logs kept in %s", label, after-before, f.dir)
		}
	}
	return res, nil
}

// scenarioBinaries: the production binaries. K duplicates across worker
// processes (1, gated path) and cache hits end to end (3).
func scenarioBinaries(ctx context.Context, e *benchEnv, rep *report) error {
	f, err := startBinaryFleet(ctx, e, "binaries", e.o.workers)
	if err != nil {
		return err
	}
	defer f.stop()
	if err := warmWorkers(ctx, f, e.manualRequest("")); err != nil {
		return err
	}
	sum := func(ctx context.Context, sample string) (int, error) {
		c, err := f.metric(ctx, sample)
		n := 0
		for _, v := range c {
			n += v
		}
		return n, err
	}
	counter := func(ctx context.Context) (int, int, error) {
		r, err := sum(ctx, metricRendersOK)
		if err != nil {
			return 0, 0, err
		}
		fo, err := sum(ctx, metricFailOpen)
		return r, fo, err
	}
	res, err := dedupRuns(ctx, e, f, fmt.Sprintf("%d worker processes (bin/worker), gate", e.o.workers), false, counter)
	if err != nil {
		return err
	}
	rep.dedup = append([]dedupResult{res}, rep.dedup...)

	// 3. Cache hit end to end on the worker processes.
	hitReq := e.manualRequest(freshVersion("hit"))
	if _, err := f.export(ctx, hitReq, pollOne); err != nil {
		return err
	}
	hit := hitResult{label: fmt.Sprintf("%d worker processes (bin/worker)", e.o.workers)}
	for range e.o.hitN {
		if err := sleepCtx(ctx, rand.N(100*time.Millisecond)); err != nil {
			return err
		}
		req, err := f.export(ctx, hitReq, pollOne)
		if err != nil {
			return fmt.Errorf("cache-hit export: %w", err)
		}
		if req.res.Rendered {
			return fmt.Errorf("%w: cache hit rendered: %+v", errScenario, req.res)
		}
		hit.e2e = append(hit.e2e, msOf(req.e2e()))
	}
	rep.hits = append([]hitResult{hit}, rep.hits...)
	logf("   cache hit e2e (processes) %s", hit.e2e.pcts(" ms"))
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// defaultCheckInterval is the worker's TASK_CHECK_INTERVAL default.
var defaultCheckInterval = func() time.Duration {
	cfg, err := config.Load(nil)
	if err != nil {
		panic("bench: the default configuration does not load: " + err.Error())
	}
	return cfg.TaskCheckInterval
}()

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
