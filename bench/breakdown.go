package main

import (
	"context"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// stepBreakdown is section M's breakdown of one export, logged during the run: every span the
// in-process workers ended while it ran, by name, with its wall time (the
// sum over the spans of that name, which run side by side, so the sum
// can exceed the export's wall) and the CPU of this process's tree
// (worker, Chromium, redis-server) while it ran. A CPU sample is shared
// equally among the leaf spans (spans without a child) running at that
// moment (waits aside: waitSpans); CPU while none ran is "between
// steps". The tree's CPU is a treeMeter's, so a Chromium restarted
// meanwhile keeps its time.
type stepBreakdown struct {
	label  string
	wallMS float64
	cpuS   float64
	steps  []stepRow
}

type stepRow struct {
	name   string
	count  int
	wallMS float64 // summed over the spans
	cpuS   float64
}

// waitSpans are steps that wait for other work (a chapter's gate while
// another worker prints it): they take no share of the CPU samples.
var waitSpans = map[string]bool{"render gate": true}

// breakdownSampleEvery is how often the tree's CPU is sampled: each sample
// walks /proc, a millisecond or so.
const breakdownSampleEvery = 25 * time.Millisecond

// spanRecorder keeps the spans that ended.
type spanRecorder struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (r *spanRecorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *spanRecorder) OnEnd(s sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
}
func (r *spanRecorder) Shutdown(context.Context) error   { return nil }
func (r *spanRecorder) ForceFlush(context.Context) error { return nil }

type cpuSample struct {
	at  time.Time
	cpu float64 // seconds, the tree's total
}

// traceSteps runs export with tracing on in this process and returns its
// breakdown. Tracing is installed only for the call, so the runs measured
// for the ratios run without it; the Redis clients, made before, are not
// traced (their commands are inside the steps).
func traceSteps(label string, export func() error) (*stepBreakdown, error) {
	rec := &spanRecorder{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	restore := tracing.Install(tp)
	var samples []cpuSample
	meter := startTreeMeter(os.Getpid(), time.Hour) // sampled below
	sample := func() {
		samples = append(samples, cpuSample{time.Now(), meter.now()})
	}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	sample()
	go func() {
		defer close(sampled)
		t := time.NewTicker(breakdownSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	t0 := time.Now()
	err := export()
	wall := time.Since(t0)
	close(stop)
	<-sampled
	sample()
	meter.seconds()
	restore()
	_ = tp.Shutdown(context.Background())
	if err != nil {
		return nil, err
	}
	rec.mu.Lock()
	spans := slices.Clone(rec.spans)
	rec.mu.Unlock()
	return breakdownOf(label, wall, samples, spans), nil
}

func breakdownOf(label string, wall time.Duration, samples []cpuSample, spans []sdktrace.ReadOnlySpan) *stepBreakdown {
	b := &stepBreakdown{label: label, wallMS: msOf(wall)}
	if n := len(samples); n > 1 {
		b.cpuS = samples[n-1].cpu - samples[0].cpu
	}
	parents := map[string]bool{}
	for _, s := range spans {
		if s.Parent().IsValid() {
			parents[s.Parent().SpanID().String()] = true
		}
	}
	rows := map[string]*stepRow{}
	row := func(name string) *stepRow {
		if rows[name] == nil {
			rows[name] = &stepRow{name: name}
		}
		return rows[name]
	}
	var leaves []sdktrace.ReadOnlySpan
	for _, s := range spans {
		r := row(s.Name())
		r.count++
		r.wallMS += msOf(s.EndTime().Sub(s.StartTime()))
		if !parents[s.SpanContext().SpanID().String()] && !waitSpans[s.Name()] {
			leaves = append(leaves, s)
		}
	}
	for k := 1; k < len(samples); k++ {
		from, to := samples[k-1].at, samples[k].at
		cpu := max(samples[k].cpu-samples[k-1].cpu, 0) // a reaped process's time can arrive a sample late
		mid := from.Add(to.Sub(from) / 2)
		var active []string
		for _, s := range leaves {
			if !s.StartTime().After(mid) && s.EndTime().After(mid) {
				active = append(active, s.Name())
			}
		}
		if len(active) == 0 {
			row("between steps").cpuS += cpu
			continue
		}
		for _, name := range active {
			row(name).cpuS += cpu / float64(len(active))
		}
	}
	for _, r := range rows {
		b.steps = append(b.steps, *r)
	}
	order := stepOrder()
	sort.SliceStable(b.steps, func(i, j int) bool {
		oi, oj := order(b.steps[i].name), order(b.steps[j].name)
		if oi != oj {
			return oi < oj
		}
		return b.steps[i].name < b.steps[j].name
	})
	return b
}

// stepOrder ranks step names in the order an export passes them.
func stepOrder() func(string) int {
	known := []string{tasks.TypeExport, "manual.lookup", "manual.queue", "render gate", "render", "render.tab", "render.load",
		"render.network_idle", "render.fonts", "render.wait_for", "render.anchor_marks", "render.print", "render.stream",
		"storage upload", "render lock release", "storage download", "manual.inspect", "manual.contents",
		"manual.decorations", "manual.assemble", "between steps"}
	return func(name string) int {
		if i := slices.Index(known, name); i >= 0 {
			return i
		}
		return len(known)
	}
}

func (b *stepBreakdown) log() {
	logf("   breakdown %s: %.1f s, CPU %.1f s", b.label, b.wallMS/1000, b.cpuS)
	for _, r := range b.steps {
		logf("     %-22s %4d spans  wall %7.2f s  CPU %6.2f s", r.name, r.count, r.wallMS/1000, r.cpuS)
	}
}
