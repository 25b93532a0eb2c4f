package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// deliveryResult is section 9: how fast a client learns that an export is
// final.
type deliveryResult struct {
	workers int
	// Cache hit end to end, ms: the real CLI (process start included) and a
	// bare asynq client polling the Inspector every 50 ms (no process).
	cli, bareAsynq dist
	// Completion (the handler returned) → the client has the answer, ms:
	// HTTP long-poll, HTTP polled every 100 ms, exportclient.Wait.
	longPoll, httpPoll, clientWait dist
}

const deliveryDoc = "<!doctype html><title>delivery</title><h1>Cache hit</h1><p>A small page: what is measured is the way back.</p>"

// scenarioDelivery (9) measures the way back to the client.
func scenarioDelivery(ctx context.Context, e *benchEnv, rep *report) error {
	res := &deliveryResult{workers: e.o.workers}
	if err := deliveryCLI(ctx, e, res, e.o.hitN); err != nil {
		return err
	}
	if err := deliveryWakeUp(ctx, e, res, max(e.o.hitN/3, 10)); err != nil {
		return err
	}
	rep.delivery = res
	logf("   CLI cache hit %s; bare asynq client %s", res.cli.pcts(" ms"), res.bareAsynq.pcts(" ms"))
	logf("   completion → client: long-poll %s; GET every 100 ms %s; exportclient.Wait %s",
		res.longPoll.pcts(" ms"), res.httpPoll.pcts(" ms"), res.clientWait.pcts(" ms"))
	return nil
}

// deliveryCLI: cache hits through `enqueue export --wait --json` on worker
// processes, alternating with a bare asynq client of the same export.
func deliveryCLI(ctx context.Context, e *benchEnv, res *deliveryResult, n int) error {
	f, err := startBinaryFleet(ctx, e, "delivery", e.o.workers)
	if err != nil {
		return err
	}
	defer f.stop()
	enqueueBin, err := filepath.Abs(filepath.Join(e.o.bin, "enqueue"))
	if err != nil {
		return err
	}
	htmlFile := filepath.Join(f.dir, "delivery.html")
	if err := os.WriteFile(htmlFile, []byte(deliveryDoc), 0o644); err != nil {
		return err
	}
	version := freshVersion("cli")
	cli := func() (time.Duration, error) {
		start := time.Now()
		cmd := exec.CommandContext(ctx, enqueueBin, "export", "--manual", "bench", "--version", version,
			"--html-file", htmlFile, "--wait=30s", "--json")
		cmd.Env = append(os.Environ(), f.env...)
		out, err := cmd.Output()
		took := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("enqueue export: %w: %s", err, out)
		}
		var r spec.Result
		if err := json.Unmarshal(out, &r); err != nil {
			return 0, fmt.Errorf("enqueue export printed %q: %w", out, err)
		}
		if r.Rendered && res.cli != nil {
			return 0, fmt.Errorf("%w: a cache hit rendered", errScenario)
		}
		return took, nil
	}
	if _, err := cli(); err != nil { // renders; every later run is a cache hit
		return err
	}
	res.cli = dist{}
	payload, err := json.Marshal(exportclient.Request{ManualID: "bench", Version: version, HTML: deliveryDoc}.Payload())
	if err != nil {
		return err
	}
	bare := asynq.NewClient(f.queueOpt)
	defer bare.Close()
	bareAsynq := func() (time.Duration, error) {
		start := time.Now()
		info, err := bare.EnqueueContext(ctx, tasks.NewExportTask(payload), asynq.Retention(time.Hour))
		if err != nil {
			return 0, err
		}
		for {
			ti, err := f.insp.GetTaskInfo(info.Queue, info.ID)
			if err != nil {
				return 0, err
			}
			if ti.State == asynq.TaskStateCompleted {
				return time.Since(start), nil
			}
			if ti.State == asynq.TaskStateArchived {
				return 0, fmt.Errorf("task %s failed: %s", ti.ID, ti.LastErr)
			}
			if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
				return 0, err
			}
		}
	}
	for range n {
		for _, m := range []struct {
			run func() (time.Duration, error)
			d   *dist
		}{{cli, &res.cli}, {bareAsynq, &res.bareAsynq}} {
			if err := sleepCtx(ctx, rand.N(100*time.Millisecond)); err != nil {
				return err
			}
			took, err := m.run()
			if err != nil {
				return err
			}
			*m.d = append(*m.d, msOf(took))
		}
	}
	return nil
}

// deliveryWakeUp: from the moment the handler of a cache hit returned (an
// in-process worker's middleware notes it) to the moment the client has the
// final state, through the HTTP long-poll of internal/api, through HTTP
// polled every 100 ms (what an API server without long-poll does), and
// through exportclient.Wait; the three take turns.
func deliveryWakeUp(ctx context.Context, e *benchEnv, res *deliveryResult, n int) error {
	f, err := startInProcFleet(ctx, e, "delivery-wake", 1, workerSpec{})
	if err != nil {
		return err
	}
	defer f.stop()
	srv := httptest.NewServer(api.New(api.Config{Client: f.client, Logger: slog.New(slog.DiscardHandler)}))
	defer srv.Close()
	req := exportclient.Request{ManualID: "bench", Version: freshVersion("wake"), HTML: deliveryDoc}
	if _, err := f.export(ctx, req, pollOne); err != nil { // renders
		return err
	}
	get := func(url string) (string, error) {
		hr, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var st struct {
			State string `json:"state"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("GET %s: %d %v", url, resp.StatusCode, err)
		}
		return st.State, nil
	}
	modes := []struct {
		name string
		d    *dist
		wait func(id string) error
	}{
		{"long-poll", &res.longPoll, func(id string) error {
			state, err := get(srv.URL + "/v1/exports/" + id + "?wait=30s")
			if err == nil && state != "completed" {
				err = fmt.Errorf("long-poll answered %s", state)
			}
			return err
		}},
		{"GET every 100 ms", &res.httpPoll, func(id string) error {
			for {
				state, err := get(srv.URL + "/v1/exports/" + id)
				if err != nil || state == "completed" {
					return err
				}
				if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
					return err
				}
			}
		}},
		{"exportclient.Wait", &res.clientWait, func(id string) error {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			st, err := f.client.Wait(wctx, id, 0)
			if err == nil && st.State != exportclient.StateCompleted {
				err = fmt.Errorf("exportclient.Wait answered %s", st.State)
			}
			return err
		}},
	}
	for i := range n * len(modes) {
		m := modes[i%len(modes)]
		if err := sleepCtx(ctx, rand.N(50*time.Millisecond)); err != nil {
			return err
		}
		job, err := f.client.Enqueue(ctx, req)
		if err != nil {
			return err
		}
		if err := m.wait(job.TaskID); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		seen := time.Now()
		// The client may be told before the middleware notes the return.
		end, ok := f.rec.get(f.rec.handlerEnd, job.TaskID)
		for try := 0; !ok && try < 100; try++ {
			time.Sleep(time.Millisecond)
			end, ok = f.rec.get(f.rec.handlerEnd, job.TaskID)
		}
		if !ok {
			return fmt.Errorf("%w: %s: no handler end recorded for %s", errScenario, m.name, job.TaskID)
		}
		// The announcement leaves just before the handler returns, so a
		// client can be told a few microseconds "before" the return: 0.
		*m.d = append(*m.d, max(0, msOf(seen.Sub(end))))
	}
	return nil
}

func (d *deliveryResult) rows() []row {
	if len(d.cli) == 0 || len(d.longPoll) == 0 {
		return nil
	}
	return []row{
		{"9", fmt.Sprintf("cache hit through the CLI (`enqueue export --wait`, process start included), %d bin/worker", d.workers),
			d.cli.pcts(" ms"), "bare asynq client, Inspector polled every 50 ms, no process start: " + d.bareAsynq.pcts(" ms"),
			fmt.Sprintf("p99 %s", ratio(d.cli.pct(99)/d.bareAsynq.pct(99))), "p99 ≤ 30 ms — " + verdict(d.cli.pct(99) <= 30)},
		{"9", "completion → client, HTTP long-poll (`GET /v1/exports/{id}?wait=30s`)", d.longPoll.pcts(" ms"),
			"GET every 100 ms: " + d.httpPoll.pcts(" ms"), fmt.Sprintf("p99 %s", ratio(d.longPoll.pct(99)/d.httpPoll.pct(99))),
			"p99 ≤ 5 ms — " + verdict(d.longPoll.pct(99) <= 5)},
		{"9", "completion → client, `exportclient.Wait`", d.clientWait.pcts(" ms"), "—", "—", "figures"},
	}
}
