package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api"
	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// capacityMode is one way inline HTML reaches the worker.
type capacityMode struct {
	label     string
	threshold int // exportclient.Config.HTMLByReference
}

type capacityResult struct {
	exports   int
	htmlBytes int
	modes     []capacityFigures
	// Enqueue of a 2 MiB inline document, ms.
	clientRef, clientInline, httpRef dist
}

type capacityFigures struct {
	label              string
	pending, completed float64 // bytes of Redis per export (INFO memory used_memory deltas)
	taskKey            int64   // MEMORY USAGE of one completed task's hash
}

// keysMemory is the sum of MEMORY USAGE over every key of the fleet's
// database (each fleet has its own): what its exports hold in Redis, without
// the allocator's and connections' own memory, which come and go.
func keysMemory(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	var total int64
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		n, err := rdb.MemoryUsage(ctx, iter.Val()).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		total += n
	}
	return total, iter.Err()
}

// scenarioCapacity (8): Redis memory of inline HTML exports, pending and
// completed, with the document beside the task (the default) and inside it
// (the old behaviour, the same-run baseline); and the enqueue latency of a
// 2 MiB document. The Go specification, a distinct copy per export (an HTML
// comment with its number), so no two exports share a stored document. The
// worker is in-process with the stub renderer: Redis is what is measured.
func scenarioCapacity(ctx context.Context, e *benchEnv, rep *report) error {
	if e.manualPDF == nil {
		return fmt.Errorf("no recorded PDF (the single-worker scenario records it)")
	}
	goSpec, _, err := goSpecHTML(ctx)
	if err != nil {
		return err
	}
	n := 30
	samples := 10
	if e.o.quick {
		n, samples = 8, 3
	}
	res := &capacityResult{exports: n, htmlBytes: len(goSpec)}
	rep.capacity = res
	for _, m := range []capacityMode{{"document beside the task (default)", 0}, {"document inside the task (before)", -1}} {
		fig, err := capacityRun(ctx, e, goSpec, n, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m.label, err)
		}
		res.modes = append(res.modes, fig)
		logf("   %s: %.1f KiB per pending export, %.1f KiB per completed one (task hash %d bytes)",
			m.label, fig.pending/1024, fig.completed/1024, fig.taskKey)
	}

	// Enqueue latency of a 2 MiB document, through exportclient and the
	// HTTP API (in this process, over loopback).
	f, _, err := e.newFleet("capacity-latency")
	if err != nil {
		return err
	}
	defer f.stop()
	inline, err := exportclient.New(exportclient.Config{Redis: f.queueOpt, HTMLByReference: -1})
	if err != nil {
		return err
	}
	defer inline.Close()
	srv := httptest.NewServer(api.New(api.Config{Client: f.client, Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	big := twoMiB()
	for i := range samples {
		doc := fmt.Sprintf("%s<!-- %d -->", big[:len(big)-16], i)
		req := exportclient.Request{ManualID: "capacity", Version: freshVersion("big"), HTML: doc}
		t0 := time.Now()
		if _, err := f.client.Enqueue(ctx, req); err != nil {
			return fmt.Errorf("enqueue of 2 MiB: %w", err)
		}
		res.clientRef = append(res.clientRef, msOf(time.Since(t0)))
		req.Version = freshVersion("big-inline")
		t0 = time.Now()
		if _, err := inline.Enqueue(ctx, req); err != nil {
			return fmt.Errorf("inline enqueue of 2 MiB: %w", err)
		}
		res.clientInline = append(res.clientInline, msOf(time.Since(t0)))
		req.Version = freshVersion("big-http")
		var body bytes.Buffer // as a non-Go client sends it: no \u003c escapes
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(req.Payload()); err != nil {
			return err
		}
		t0 = time.Now()
		resp, err := http.Post(srv.URL+"/v1/exports", "application/json", &body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("%w: POST of 2 MiB: %s", errScenario, resp.Status)
		}
		res.httpRef = append(res.httpRef, msOf(time.Since(t0)))
	}
	logf("   enqueue of 2 MiB: exportclient %s (inline %s), HTTP API %s", res.clientRef.mmm(" ms"), res.clientInline.mmm(" ms"), res.httpRef.mmm(" ms"))
	return nil
}

// twoMiB is a valid 2 MiB HTML document.
func twoMiB() string {
	var b strings.Builder
	b.WriteString("<!doctype html><title>big</title>")
	for b.Len() < spec.MaxHTMLBytes {
		fmt.Fprintf(&b, "<p>Paragraph %d of a very long generated manual.</p>\n", b.Len())
	}
	return b.String()[:spec.MaxHTMLBytes-32]
}

func capacityRun(ctx context.Context, e *benchEnv, goSpec string, n int, m capacityMode) (capacityFigures, error) {
	fig := capacityFigures{label: m.label}
	f, env, err := e.newFleet("capacity-" + strconv.Itoa(m.threshold+1))
	if err != nil {
		return fig, err
	}
	defer f.stop()
	client, err := exportclient.New(exportclient.Config{Redis: f.queueOpt, HTMLByReference: m.threshold})
	if err != nil {
		return fig, err
	}
	defer client.Close()
	m0, err := keysMemory(ctx, f.rdb)
	if err != nil {
		return fig, err
	}
	var reqs []*request
	for i := range n {
		r := &request{enq: time.Now()}
		job, err := client.Enqueue(ctx, exportclient.Request{ManualID: "capacity", Version: freshVersion("c"),
			HTML: goSpec + fmt.Sprintf("\n<!-- copy %d -->\n", i)})
		if err != nil {
			return fig, err
		}
		r.id, r.queue = job.TaskID, job.Queue
		reqs = append(reqs, r)
	}
	m1, err := keysMemory(ctx, f.rdb)
	if err != nil {
		return fig, err
	}
	fig.pending = float64(m1-m0) / float64(n)
	stub := &stubRenderer{pdf: e.manualPDF, pages: e.manualPages}
	if err := f.startInProcWorkers(ctx, env, "capacity", 1, workerSpec{stub: stub}); err != nil {
		return fig, err
	}
	if err := f.await(ctx, reqs, pollMany, 3*time.Minute); err != nil {
		return fig, err
	}
	for _, w := range f.workers { // nothing of the workers' own in the figure
		w.Shutdown()
	}
	f.workers = nil
	m2, err := keysMemory(ctx, f.rdb)
	if err != nil {
		return fig, err
	}
	fig.completed = float64(m2-m0) / float64(n)
	fig.taskKey, _ = f.rdb.MemoryUsage(ctx, keyspace.AsynqTask(reqs[0].queue, reqs[0].id)).Result()
	return fig, nil
}

// rows are the summary lines of section 8.
func (c *capacityResult) rows() []row {
	if len(c.modes) < 2 {
		return nil
	}
	ref, inline := c.modes[0], c.modes[1]
	kib := func(b float64) string { return num(b/1024) + " KiB" }
	rows := []row{
		{"8", fmt.Sprintf("Redis per pending export, Go spec inline (%d KiB HTML), %s", c.htmlBytes>>10, ref.label), kib(ref.pending),
			inline.label + ": " + kib(inline.pending), ratio(ref.pending / inline.pending), "≤ 100 KiB — " + verdict(ref.pending <= 100<<10)},
		{"8", "Redis per completed export (kept RESULT_RETENTION), " + ref.label, kib(ref.completed) + fmt.Sprintf(" (task hash %d B)", ref.taskKey),
			inline.label + ": " + kib(inline.completed) + fmt.Sprintf(" (task hash %d B)", inline.taskKey), ratio(ref.completed / inline.completed),
			"≤ 8 KiB — " + verdict(ref.completed <= 8<<10)},
	}
	if len(c.clientRef) > 0 && len(c.httpRef) > 0 && len(c.clientInline) > 0 {
		rows = append(rows, row{"8", "enqueue of a 2 MiB HTML document: exportclient / HTTP API (beside the task)",
			c.clientRef.mmm(" ms") + " / " + c.httpRef.mmm(" ms"), "exportclient, inside the task: " + c.clientInline.mmm(" ms"),
			ratio(c.clientRef.median() / c.clientInline.median()), "figures"})
	}
	return rows
}
