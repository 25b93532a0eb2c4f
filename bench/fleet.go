package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/platform/logging"
	"github.com/pdfexport/pdfexport/internal/platform/redisconn"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks/export"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/worker"
)

// benchEnv is what the scenarios share: the options, the work directory, the
// Redis server (one database per fleet) and the standard document.
type benchEnv struct {
	o      options
	work   string
	redis  *harness.Redis
	manual string

	dbs      atomic.Int32
	keepWork *atomic.Bool // set: keep the work directory (logs) for a look

	// The manual as rendered once by a real Chromium; the stub renderer of
	// the pick-up scenario replays it.
	manualPDF   []byte
	manualPages int
}

// nextDB gives every fleet its own Redis database, so that no fleet can take
// another's tasks and lock keys never collide.
func (e *benchEnv) nextDB() int { return int(e.dbs.Add(1)) }

// manualRequest is the standard export: the sample manual, inline, with the
// readiness expression the demo uses. Every version names a fresh artifact.
func (e *benchEnv) manualRequest(version string) exportclient.Request {
	return exportclient.Request{ManualID: "acme-orbit-gateway", Version: version, HTML: e.manual,
		Options: exportclient.Options{WaitFor: "window.__PDF_READY__===true"}}
}

// settingsOf resolves a request's print options as the worker does (the
// options travel to it as JSON, which both sides' types share).
func settingsOf(o exportclient.Options) spec.PrintSettings {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	var so spec.Options
	if err := json.Unmarshal(b, &so); err != nil {
		panic(err)
	}
	return so.Settings()
}

// freshVersion names an artifact no earlier run stored.
func freshVersion(tag string) string {
	return tag + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// recorder notes, per task id, when the handler started and ended and when
// it called the renderer; and counts renders.
type recorder struct {
	mu           sync.Mutex
	renderStart  map[string]time.Time
	handlerStart map[string]time.Time
	handlerEnd   map[string]time.Time
	renders      atomic.Int64
	failOpen     atomic.Int64 // gate entries that failed open
}

func newRecorder() *recorder {
	return &recorder{renderStart: map[string]time.Time{}, handlerStart: map[string]time.Time{}, handlerEnd: map[string]time.Time{}}
}

func (r *recorder) note(m map[string]time.Time, ctx context.Context, t time.Time) {
	id, ok := asynq.GetTaskID(ctx)
	if !ok {
		return
	}
	r.mu.Lock()
	if _, seen := m[id]; !seen { // the first attempt counts
		m[id] = t
	}
	r.mu.Unlock()
}

func (r *recorder) get(m map[string]time.Time, id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := m[id]
	return t, ok
}

// middleware records when asynq hands a task to the handler and when the
// handler returns.
func (r *recorder) middleware(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		r.note(r.handlerStart, ctx, time.Now())
		err := next.ProcessTask(ctx, t)
		r.note(r.handlerEnd, ctx, time.Now())
		return err
	})
}

// recordingRenderer notes when the handler begins a render, then renders.
type recordingRenderer struct {
	inner export.Renderer
	rec   *recorder
}

func (r recordingRenderer) Render(ctx context.Context, src render.Source, s spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	r.rec.note(r.rec.renderStart, ctx, time.Now())
	r.rec.renders.Add(1)
	return r.inner.Render(ctx, src, s, sink)
}

// stubRenderer replays a PDF recorded from a real render instead of driving
// Chromium: for scenarios whose measurement ends when the render begins.
type stubRenderer struct {
	pdf   []byte
	pages int
}

func (s stubRenderer) Render(ctx context.Context, _ render.Source, _ spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	start := time.Now()
	err := sink(ctx, bytes.NewReader(s.pdf))
	return render.Stats{Pages: s.pages, Bytes: int64(len(s.pdf)), Duration: time.Since(start)}, err
}

// countingGate counts the entries that failed open (Redis unreachable or too
// slow: the task renders without the lock).
type countingGate struct {
	inner    export.Gate
	failOpen *atomic.Int64
}

func (g countingGate) Enter(ctx context.Context, id, staleETag string) (lock.Entry, error) {
	e, err := g.inner.Enter(ctx, id, staleETag)
	if err == nil && e.Result == lock.FailOpen {
		g.failOpen.Add(1)
	}
	return e, err
}

// noGate is the baseline without the render gate: every task is let through
// as if Redis were unreachable (lock.FailOpen), which is exactly the worker's
// fail-open path: render without the lock, store create-only.
type noGate struct{}

func (g countingGate) ForgetStored(ctx context.Context, id, etag string) (bool, error) {
	return g.inner.ForgetStored(ctx, id, etag)
}

func (noGate) ForgetStored(context.Context, string, string) (bool, error) { return false, nil }

func (noGate) Enter(context.Context, string, string) (lock.Entry, error) {
	return lock.Entry{Result: lock.FailOpen, Cause: errors.New("bench: no-gate baseline")}, nil
}

// workerSpec is how the in-process workers of a fleet differ from cmd/worker.
type workerSpec struct {
	noGate bool
	// checkInterval overrides TASK_CHECK_INTERVAL; asynqDefault uses asynq's
	// own default (1s) instead.
	checkInterval time.Duration
	asynqDefault  bool
	noDoorbell    bool          // TASK_DOORBELL=false: poll only
	stub          *stubRenderer // replaces Chromium
	extraEnv      []string      // more of the workers' environment (ALLOWED_HOSTS=…)
}

// fleet is a set of workers sharing one Redis database and one storage
// folder, with a client that enqueues and observes results.
type fleet struct {
	name     string
	dir      string
	queueOpt asynq.RedisConnOpt
	client   *exportclient.Client
	insp     *asynq.Inspector
	rdb      *redis.Client // the fleet's database, for cheap state polls
	env      []string      // the workers' environment (the CLI reads the same)

	rec     *recorder        // in-process fleets
	workers []*worker.Worker // in-process fleets
	procs   []*harness.Proc  // worker processes
	admins  []string         // their admin addresses

	cl cleanups
}

func (f *fleet) stop() { f.cl.run() }

// baseEnv is the worker environment of a fleet: production defaults except
// where the fleet lives.
func (e *benchEnv) baseEnv(db int, dir string) []string {
	env := []string{"REDIS_URL=" + e.redis.URL(db), "STORAGE_URL=file://" + filepath.Join(dir, "artifacts"),
		"LOG_FORMAT=json", "LOG_LEVEL=info"}
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		env = append(env, "CHROMIUM_PATH="+p)
	}
	return env
}

func (e *benchEnv) newFleet(name string) (*fleet, []string, error) {
	dir := filepath.Join(e.work, name)
	if err := os.MkdirAll(filepath.Join(dir, "artifacts"), 0o755); err != nil {
		return nil, nil, err
	}
	env := e.baseEnv(e.nextDB(), dir)
	cfg, err := config.Load(env)
	if err != nil {
		return nil, nil, err
	}
	queueOpt, err := redisconn.QueueOpt(cfg)
	if err != nil {
		return nil, nil, err
	}
	f := &fleet{name: name, dir: dir, queueOpt: queueOpt, env: env}
	// The public client with its production defaults (queue "default",
	// retention 24h, 5 retries).
	f.client, err = exportclient.New(exportclient.Config{Redis: queueOpt})
	if err != nil {
		return nil, nil, err
	}
	f.insp = asynq.NewInspector(queueOpt)
	ropt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	f.rdb = redis.NewClient(ropt)
	f.cl.add(func() { _ = f.client.Close(); _ = f.insp.Close(); _ = f.rdb.Close() })
	return f, env, nil
}

// startInProcFleet starts n workers in this process, built by
// internal/worker exactly as cmd/worker builds them (configuration defaults,
// storage, Chromium, lock, handler, asynq server, task deadline, retry
// delays, metrics), with the recorder's instrumentation around the renderer,
// the gate and every task, and without an admin listener each.
func startInProcFleet(ctx context.Context, e *benchEnv, name string, n int, ws workerSpec) (f *fleet, err error) {
	f, env, err := e.newFleet(name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	return f, f.startInProcWorkers(ctx, env, name, n, ws)
}

// startInProcWorkers adds n in-process workers to f, whose environment is env.
func (f *fleet) startInProcWorkers(ctx context.Context, env []string, name string, n int, ws workerSpec) error {
	f.rec = newRecorder()
	logFile, err := os.Create(filepath.Join(f.dir, "workers.log"))
	if err != nil {
		return err
	}
	f.cl.add(func() { logFile.Close() })
	cfg, err := config.Load(append(env, ws.extraEnv...))
	if err != nil {
		return err
	}
	cfg.AdminAddr = "" // n workers in one process cannot share one admin port
	switch {
	case ws.asynqDefault:
		cfg.TaskCheckInterval = 0 // asynq applies its default, 1s
	case ws.checkInterval > 0:
		cfg.TaskCheckInterval = ws.checkInterval
	}
	if ws.noDoorbell {
		cfg.TaskDoorbell = false
	}
	f.workers = make([]*worker.Worker, n)
	startErrs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		hostname := fmt.Sprintf("%s-%d", name, i)
		opts := worker.Options{
			Logger: logging.New(logFile, cfg.LogLevel, cfg.LogFormat).With("worker", hostname),
			// Unlike cmd/worker (which lets renders finish on SIGTERM), an
			// interrupted benchmark cancels its renders at once.
			BaseContext:  ctx,
			Hostname:     hostname,
			Middleware:   []asynq.MiddlewareFunc{f.rec.middleware},
			WrapRenderer: func(r export.Renderer) export.Renderer { return recordingRenderer{inner: r, rec: f.rec} },
			WrapGate: func(g export.Gate) export.Gate {
				if ws.noGate {
					g = noGate{}
				}
				return countingGate{inner: g, failOpen: &f.rec.failOpen}
			},
		}
		if ws.stub != nil {
			opts.Renderer = *ws.stub
		}
		w := worker.New(cfg, opts)
		f.workers[i] = w
		f.cl.add(w.Shutdown)
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, worker.StartTimeout)
			defer cancel()
			startErrs[i] = w.Start(sctx)
		})
	}
	wg.Wait()
	if err := errors.Join(startErrs...); err != nil {
		return fmt.Errorf("starting in-process workers: %w", err)
	}
	return nil
}

// startBinaryFleet starts n bin/worker processes with production defaults,
// changed by extra (VAR=value).
func startBinaryFleet(ctx context.Context, e *benchEnv, name string, n int, extra ...string) (f *fleet, err error) {
	bin, err := filepath.Abs(filepath.Join(e.o.bin, "worker"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s missing: run `make build` (make bench does)", bin)
	}
	f, env, err := e.newFleet(name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	for i := range n {
		port, err := harness.FreePort()
		if err != nil {
			return f, err
		}
		admin := "127.0.0.1:" + strconv.Itoa(port)
		p, err := harness.Start(fmt.Sprintf("worker-%d", i+1), filepath.Join(f.dir, fmt.Sprintf("worker-%d.log", i+1)), bin,
			append(append(append(os.Environ(), env...), extra...), "ADMIN_ADDR="+admin))
		if err != nil {
			return f, err
		}
		f.procs = append(f.procs, p)
		f.admins = append(f.admins, admin)
		f.cl.add(func() {
			if err := p.Stop(45 * time.Second); err != nil && ctx.Err() == nil {
				logf("warning: %s did not exit cleanly on SIGTERM: %v (log %s)", p.Name, err, p.LogPath())
			}
			p.Kill() // anything of its process group still left
		})
	}
	for i, a := range f.admins {
		if err := waitReady(ctx, "http://"+a+"/readyz", f.procs[i], 60*time.Second); err != nil {
			return f, fmt.Errorf("worker-%d not ready: %w", i+1, err)
		}
	}
	return f, nil
}

// Worker metrics the dedup scenario reads.
const (
	metricRendersOK = `pdfexport_renders_total{result="ok"}`
	metricFailOpen  = `pdfexport_lock_acquire_total{result="fail_open"}`
)

// metric reads one sample of every worker process's /metrics.
func (f *fleet) metric(ctx context.Context, sample string) ([]int, error) {
	out := make([]int, len(f.admins))
	for i, a := range f.admins {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
				fv, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				out[i] = int(fv)
			}
		}
		resp.Body.Close()
	}
	return out, nil
}

// request is one export as a client sees it.
type request struct {
	id    string
	queue string
	enq   time.Time // just before Enqueue
	done  time.Time // when the client saw it completed
	res   spec.Result
}

func (r *request) e2e() time.Duration { return r.done.Sub(r.enq) }

// enqueue submits req through the public client.
func (f *fleet) enqueue(ctx context.Context, req exportclient.Request) (*request, error) {
	r := &request{enq: time.Now()}
	job, err := f.client.Enqueue(ctx, req)
	if err != nil {
		return nil, err
	}
	r.id, r.queue = job.TaskID, job.Queue
	return r, nil
}

// await watches every pending request's task until all completed, then
// reads each result with the asynq Inspector (what `enqueue export --wait`
// does). To keep the observer's own load off the measurement (a burst of K
// tasks polled every 10 ms would be 100·K Lua calls a second on a 2-core
// machine that is rendering), a sweep reads the state field of all pending
// tasks in one pipelined round trip. An archived task is an error.
func (f *fleet) await(ctx context.Context, reqs []*request, poll, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := append([]*request(nil), reqs...)
	for {
		states := make([]*redis.StringCmd, len(pending))
		_, err := f.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range pending {
				states[i] = p.HGet(ctx, keyspace.AsynqTask(r.queue, r.id), keyspace.AsynqTaskState) // asynq's task hash
			}
			return nil
		})
		now := time.Now()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("reading task states: %w", err)
		}
		rest := pending[:0]
		for i, r := range pending {
			state, err := states[i].Result()
			if err != nil {
				return fmt.Errorf("reading the state of task %s: %w", r.id, err)
			}
			switch state {
			case "completed", "archived":
				info, err := f.insp.GetTaskInfo(r.queue, r.id)
				if err != nil {
					return fmt.Errorf("reading task %s: %w", r.id, err)
				}
				if info.State != asynq.TaskStateCompleted {
					return fmt.Errorf("task %s failed: %s", r.id, info.LastErr)
				}
				r.done = now
				if err := spec.DecodeResult(info.Result, &r.res); err != nil {
					return fmt.Errorf("task %s result %q: %w", r.id, info.Result, err)
				}
			default:
				rest = append(rest, r)
			}
		}
		pending = rest
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d exports unfinished: %w", len(pending), len(reqs), ctx.Err())
		case <-time.After(poll):
		}
	}
}

// export enqueues one request and waits for its result.
func (f *fleet) export(ctx context.Context, req exportclient.Request, poll time.Duration) (*request, error) {
	r, err := f.enqueue(ctx, req)
	if err != nil {
		return nil, err
	}
	return r, f.await(ctx, []*request{r}, poll, 3*time.Minute)
}

// burst enqueues k copies of req at once, as k concurrent clients, and waits
// for all of them. It returns the requests and the wall time from the first
// enqueue to the last result seen.
func (f *fleet) burst(ctx context.Context, req exportclient.Request, k int, poll time.Duration) ([]*request, time.Duration, error) {
	reqs := make([]*request, k)
	errs := make([]error, k)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reqs[i], errs[i] = f.enqueue(ctx, req)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	if err := f.await(ctx, reqs, poll, 5*time.Minute); err != nil {
		return nil, 0, err
	}
	var last time.Time
	for _, r := range reqs {
		if r.done.After(last) {
			last = r.done
		}
	}
	return reqs, last.Sub(start), nil
}
