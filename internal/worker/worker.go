package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/admin"
	"github.com/pdfexport/pdfexport/internal/delivery/callback"
	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/logging"
	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/platform/redisconn"
	"github.com/pdfexport/pdfexport/internal/platform/tracing"
	"github.com/pdfexport/pdfexport/internal/queue/doorbell"
	"github.com/pdfexport/pdfexport/internal/queue/fleet"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/sourceauth"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/tasks"
	callbacktask "github.com/pdfexport/pdfexport/internal/tasks/callback"
	"github.com/pdfexport/pdfexport/internal/tasks/export"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
)

// ErrUnavailable wraps a start failure of a dependency (Redis, storage,
// Chromium, the admin listener): the configuration may be right, the world
// is not. cmd/worker exits 3 on it.
var ErrUnavailable = errors.New("unavailable")

// StartTimeout bounds Run's start: storage, Chromium and the queue server.
const StartTimeout = 30 * time.Second

// staleTempAge is how old a temp file of the file backend must be to be
// swept: no upload lives a day. The sweep runs at start and then every
// sweepInterval, in the background: a crashed worker's files go even when no
// worker restarts.
const (
	staleTempAge  = 24 * time.Hour
	sweepInterval = time.Hour
)

// Options override parts of a worker; the zero value runs it as cmd/worker
// does.
type Options struct {
	// Logger receives the logs of every component. nil: slog.Default().
	Logger *slog.Logger
	// Metrics observes every component and backs /metrics. nil: a new
	// admin.Metrics.
	Metrics *admin.Metrics
	// BaseContext is the parent of every task's context. nil:
	// context.Background(), so that a SIGTERM lets renders in flight finish
	// within SHUTDOWN_TIMEOUT; a benchmark passes its own to cancel them.
	BaseContext context.Context
	// Renderer replaces Chromium (a benchmark's stub). nil: a
	// render.Renderer configured from the RENDER_* variables.
	Renderer export.Renderer
	// WrapRenderer and WrapGate wrap the renderer and the render gate the
	// handler uses (instrumentation, a gate that always fails open).
	WrapRenderer func(export.Renderer) export.Renderer
	WrapGate     func(export.Gate) export.Gate
	// Middleware runs around every task, outside the per-attempt deadline.
	Middleware []asynq.MiddlewareFunc
	// Hostname goes into the metadata of the artifacts this worker stores.
	// "": os.Hostname.
	Hostname string
	// FinishSweepInterval is how often the worker finishes exports asynq
	// archived without a final state. 0: 5s.
	FinishSweepInterval time.Duration
	// PostProcessing, when set, is called with +1 when an export's
	// post-processing (document options) takes the worker's one slot and
	// with -1 when it gives it back (instrumentation).
	PostProcessing func(delta int)
}

// Worker is one worker process's components. Create it with New, then Run,
// or Start and Shutdown.
type Worker struct {
	cfg     config.Config
	opts    Options
	log     *slog.Logger
	metrics *admin.Metrics

	own       *allowlist.Reserved // the worker's own endpoints, which no render or callback may reach
	chromium  *render.Renderer    // nil when Options.Renderer replaces it
	store     storage.Backend
	lockRDB   redis.UniversalClient
	srv       *asynq.Server    // the interactive lane (every queue without a batch lane)
	batchSrv  *asynq.Server    // the batch lane; nil without one
	batch     *render.Renderer // the batch lane's Chromium; nil without one, or when Options.Renderer replaced it
	inspector *asynq.Inspector

	// base is the parent of every task's context; Shutdown cancels it with
	// ErrShuttingDown once the queue server stopped waiting, so that tasks
	// still running release their leases while Redis is still open.
	base     context.Context
	stopTask context.CancelCauseFunc
	inflight sync.WaitGroup // tasks whose handler has not returned

	// undo holds the undos of Start's steps done, for Shutdown (or Start's
	// failure) to run in reverse.
	undo undos
}

// background runs run in a goroutine the worker owns; stop, the undo of
// the start step that called it, cancels its context and waits for it to
// return.
func (w *Worker) background(run func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	return func() { cancel(); <-done }
}

// watchSourceAuth loads SOURCE_AUTH_FILE and keeps it current until stop.
// A file that does not parse is a configuration error.
func (w *Worker) watchSourceAuth(path string) (auth *sourceauth.Watcher, stop func(), err error) {
	auth, err = sourceauth.Open(path, w.log)
	if err != nil {
		return nil, nil, &config.Error{Vars: []config.VarError{{Var: "SOURCE_AUTH_FILE", Reason: err.Error()}}}
	}
	stop = w.background(auth.Run)
	w.log.Info("source credentials loaded", "file", path, "rules", auth.Rules().Len())
	for _, n := range auth.Rules().Narrowed {
		w.log.Warn("source credentials: a hosts entry now matches fewer origins", "file", path, "entry", n)
	}
	return auth, stop, nil
}

// ErrShuttingDown is the cause of the context of a task still running when
// the worker shuts down after SHUTDOWN_TIMEOUT.
var ErrShuttingDown = errors.New("worker shutting down")

// handlerGrace bounds how long Shutdown waits, after canceling them, for
// tasks to return (they release their leases on the way).
const handlerGrace = 10 * time.Second

// New returns a worker for cfg (as config.Load returned it). It does no I/O.
func New(cfg config.Config, opts Options) *Worker {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = admin.NewMetrics()
	}
	if opts.BaseContext == nil {
		opts.BaseContext = context.Background()
	}
	return &Worker{cfg: cfg, opts: opts, log: opts.Logger, metrics: opts.Metrics}
}

// Chromium is the worker's renderer, nil when Options.Renderer replaced it.
// It is started by Start.
func (w *Worker) Chromium() *render.Renderer { return w.chromium }

// Metrics are the worker's metrics.
func (w *Worker) Metrics() *admin.Metrics { return w.metrics }

// Run starts the worker (bounded by StartTimeout), serves until ctx ends,
// then shuts it down.
func (w *Worker) Run(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, StartTimeout)
	err := w.Start(sctx)
	cancel()
	if err != nil {
		w.Shutdown()
		return err
	}
	<-ctx.Done()
	w.log.Info("shutting down: no new tasks; renders in flight get SHUTDOWN_TIMEOUT", "timeout", w.cfg.ShutdownTimeout)
	w.Shutdown()
	w.log.Info("worker stopped")
	return nil
}

// Start opens storage, starts Chromium, connects the lock Redis, starts the
// queue server and the admin HTTP server; ctx bounds it. It runs the steps
// of startSteps in order; when one fails, it undoes the steps done, last
// first, and returns the error: nothing it started is left running, and
// Shutdown after it does nothing. Errors from unreachable dependencies wrap
// ErrUnavailable.
func (w *Worker) Start(ctx context.Context) error {
	b := &wiring{cfg: w.cfg}
	for _, s := range w.startSteps(b) {
		undo, err := s.do(ctx)
		if undo != nil {
			w.undo = append(w.undo, undo)
		}
		if err != nil {
			w.log.Info("start failed; undoing what started", "step", s.name)
			w.Shutdown()
			return err
		}
	}
	w.log.Info("worker started", "version", buildinfo.String(), "envelope_versions", fmt.Sprintf("%d-%d", spec.MinEnvelopeVersion, spec.EnvelopeVersion), "queues", w.cfg.Queues, "concurrency", w.cfg.WorkerConcurrency,
		"batch_queues", slices.Sorted(maps.Keys(b.batch)), "batch_concurrency", w.cfg.BatchConcurrency,
		"render_concurrency", w.cfg.RenderConcurrency, "storage", w.store.Describe(), "admin", w.cfg.AdminAddr,
		"allowed_hosts", b.cfg.Allowed.String())
	return nil
}

// startStep is one step of Start. do brings one component up and returns
// its undo (nil: nothing to undo), which Shutdown runs, or Start when a
// later step fails. A step that fails returns the undo of what it brought
// up before failing, and Start runs it with the others.
type startStep struct {
	name string
	do   func(ctx context.Context) (undo func(), err error)
}

// wiring is what Start's steps hand on to the later ones.
type wiring struct {
	cfg        config.Config // with the worker's own endpoints reserved
	workspace  *export.Workspace
	renderer   export.Renderer
	gate       export.Gate
	lockRDB    redis.UniversalClient
	queueOpt   asynq.RedisConnOpt
	queueRDB   redis.UniversalClient
	outcomes   *asynq.Client
	finisher   *outcome.Finisher
	finals     *outcome.Listener
	secretKeys *sidestore.Keys
	callbacks  *callback.Deliverer
	sites      *siteReader
	sourceAuth *sourceauth.Watcher // SOURCE_AUTH_FILE's rules; nil without it
	idleWait   func(queues []string) func(context.Context, time.Duration)
	batch      map[string]int // the batch lane's queues
	mux        *asynq.ServeMux
	batchMux   *asynq.ServeMux
}

// startSteps are Start's steps, in dependency order; Shutdown undoes them
// in reverse.
func (w *Worker) startSteps(b *wiring) []startStep {
	return []startStep{
		{"storage", w.startStorage},
		{"own endpoints", func(context.Context) (func(), error) { return nil, w.reserveOwn(b) }},
		{"workspace", func(context.Context) (func(), error) { return w.openWorkspace(b) }},
		{"chromium", func(ctx context.Context) (func(), error) { return w.startChromium(ctx, b) }},
		{"lock redis", func(context.Context) (func(), error) { return w.connectLocks(b) }},
		{"queue redis", func(ctx context.Context) (func(), error) { return w.connectQueue(ctx, b) }},
		{"outcomes", func(context.Context) (func(), error) { return w.openOutcomes(b) }},
		{"secrets", func(context.Context) (func(), error) { return nil, w.loadSecrets(b) }},
		{"callbacks", func(context.Context) (func(), error) { return w.newCallbacks(b), nil }},
		{"sites", func(context.Context) (func(), error) { return w.newSites(b), nil }},
		{"doorbell", func(context.Context) (func(), error) { return w.startDoorbell(b), nil }},
		{"queue servers", func(context.Context) (func(), error) { return w.newServers(b) }},
		{"inspector", func(context.Context) (func(), error) { return w.openInspector(b), nil }},
		{"admin", func(context.Context) (func(), error) { return w.startAdmin(b) }},
		{"announce", func(ctx context.Context) (func(), error) { return w.announce(ctx, b.queueRDB) }},
		{"serve", func(context.Context) (func(), error) { return w.serve(b) }},
		{"sweep archived", func(context.Context) (func(), error) { return w.sweepArchived(b.finisher), nil }},
	}
}

// startStorage opens the artifact storage and checks that it is usable; a
// file store's stale temp files are swept until Shutdown.
func (w *Worker) startStorage(ctx context.Context) (func(), error) {
	cfg := w.cfg
	storeCfg := cfg.Storage()
	storeCfg.S3CreateBucket, storeCfg.Logger = cfg.S3CreateBucket, w.log // only a worker creates the bucket
	store, err := storage.Open(ctx, storeCfg)
	if err != nil {
		return nil, fmt.Errorf("%w: opening storage %s: %w", ErrUnavailable, redact.URL(cfg.StorageURL), err)
	}
	w.store = store
	if err := store.Ping(ctx); err != nil {
		return nil, fmt.Errorf("%w: storage %s not usable: %w", ErrUnavailable, store.Describe(), err)
	}
	if files, ok := store.(*storage.File); ok {
		return w.sweepTemp(files), nil
	}
	return nil, nil
}

// reserveOwn refuses the worker's own endpoints whatever the allowlists
// say: by the renderer's tab guard and egress proxy, by the validation of
// source and callback URLs, and by callback delivery.
func (w *Worker) reserveOwn(b *wiring) error {
	own, err := ownEndpoints(b.cfg)
	if err != nil {
		return err
	}
	w.own = own
	b.cfg.Allowed = b.cfg.Allowed.WithReserved(own)
	b.cfg.CallbackAllowed = b.cfg.CallbackAllowed.WithReserved(own)
	return nil
}

// openWorkspace opens what both lanes' handlers and Chromiums share: one
// private temporary directory and one post-processing slot per worker
// process. It is closed after the queue servers, the tasks and the browsers
// stopped (undo runs in reverse).
func (w *Worker) openWorkspace(b *wiring) (func(), error) {
	log := w.log
	workspace, err := export.OpenWorkspace(export.WorkspaceConfig{Logger: log, OnPostProcess: w.opts.PostProcessing})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	b.workspace = workspace
	return func() {
		if err := workspace.Close(); err != nil {
			log.Warn("removing the private temporary directory", "dir", workspace.Dir(), "err", err)
		}
	}, nil
}

// startChromium starts the interactive lane's Chromium, with the source
// credentials of SOURCE_AUTH_FILE kept current, unless Options.Renderer
// replaces it.
func (w *Worker) startChromium(ctx context.Context, b *wiring) (func(), error) {
	cfg, log := b.cfg, w.log
	var undo undos
	if cfg.SourceAuthFile != "" {
		// The renders' credentials, and a site discovery's (newSites).
		auth, stop, err := w.watchSourceAuth(cfg.SourceAuthFile)
		if err != nil {
			return nil, err
		}
		undo = append(undo, stop)
		b.sourceAuth = auth
	}
	b.renderer = w.opts.Renderer
	if b.renderer == nil {
		rcfg := render.Config{ChromiumPath: cfg.ChromiumPath, Concurrency: cfg.RenderConcurrency,
			Timeout: cfg.RenderTimeout, MaxRendersPerBrowser: cfg.RenderMaxPerBrowser, MaxPages: cfg.RenderMaxPages,
			MaxBytes: cfg.RenderMaxBytes, AllowedHosts: cfg.Allowed, Logger: log, Observer: w.metrics, TempDir: b.workspace.Dir()}
		if b.sourceAuth != nil {
			rcfg.SourceAuth = b.sourceAuth
		}
		chromium, err := render.New(rcfg)
		if err != nil {
			return undo.run, fmt.Errorf("configuring the renderer: %w", err)
		}
		w.chromium = chromium
		undo = append(undo, func() {
			if err := chromium.Close(); err != nil {
				log.Warn("closing Chromium", "err", err)
			}
		})
		if err := chromium.Start(ctx); err != nil {
			return undo.run, fmt.Errorf("%w: starting Chromium: %w", ErrUnavailable, err)
		}
		b.renderer = chromium
	}
	if w.opts.WrapRenderer != nil {
		b.renderer = w.opts.WrapRenderer(b.renderer)
	}
	return undo.run, nil
}

// connectLocks makes the lock Redis client and the render gate on it.
func (w *Worker) connectLocks(b *wiring) (func(), error) {
	cfg := b.cfg
	lockRDB, err := redisconn.LockClient(cfg)
	if err != nil {
		return nil, err
	}
	w.lockRDB, b.lockRDB = lockRDB, lockRDB
	undo := func() { _ = lockRDB.Close() }
	if err := tracing.Redis(lockRDB); err != nil { // with tracing on: the gate's commands are spans
		return undo, err
	}
	b.gate = lock.NewGate(lock.NewMutex(lockRDB, lock.Config{TTL: cfg.LockTTL, WaitTimeout: cfg.LockWaitTimeout,
		Grace: cfg.LockGrace, FailOpen: cfg.LockFailOpen, Logger: w.log, Observer: w.metrics}))
	if w.opts.WrapGate != nil {
		b.gate = w.opts.WrapGate(b.gate)
	}
	return undo, nil
}

// connectQueue makes the handler's queue Redis client and checks both
// Redis servers. The queue Redis must answer now: a wrong password, user or
// TLS setting is a start failure naming the server and the reason (exit
// 3), not a worker that looks up and never takes a task. The lock Redis may
// be down (the gate fails open), but not refuse us.
func (w *Worker) connectQueue(ctx context.Context, b *wiring) (func(), error) {
	cfg := b.cfg
	queueOpt, err := redisconn.QueueOpt(cfg)
	if err != nil {
		return nil, err
	}
	b.queueOpt = queueOpt
	queueRDB, ok := queueOpt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, fmt.Errorf("queue Redis: %T makes no go-redis client", queueOpt)
	}
	b.queueRDB = queueRDB
	undo := func() { _ = queueRDB.Close() }
	// The handler's own queue Redis commands (source documents, cancel
	// marks, final outcomes, callback enqueues); asynq's polling runs on
	// the server's own client and makes no spans.
	if err := tracing.Redis(queueRDB); err != nil {
		return undo, err
	}
	if err := redisconn.Ping(ctx, queueRDB); err != nil {
		return undo, fmt.Errorf("%w: queue Redis %s: %s", ErrUnavailable, redisconn.Describe(cfg), redact.Text(err.Error()))
	}
	if err := redisconn.Ping(ctx, b.lockRDB); err != nil {
		if redisconn.IsRefusal(err) {
			return undo, fmt.Errorf("%w: lock Redis %s: %s", ErrUnavailable, redisconn.DescribeLock(cfg), redact.Text(err.Error()))
		}
		w.log.Warn("lock Redis unreachable at start; renders fail open until it answers", "redis", redisconn.DescribeLock(cfg), "err", redact.Text(err.Error()))
	}
	return undo, nil
}

// openOutcomes sets up how final outcomes are recorded, announced on the
// queue Redis and their callbacks enqueued there, as tasks of their own. A
// running chapter hears at once that its manual ended; the listener
// subscribes at the first chapter that asks.
func (w *Worker) openOutcomes(b *wiring) (func(), error) {
	b.outcomes = asynq.NewClientFromRedisClient(b.queueRDB) // closed with queueRDB
	b.finisher = &outcome.Finisher{RDB: b.queueRDB, Client: b.outcomes, CallbackMaxRetry: b.cfg.CallbackMaxRetry,
		Retention: b.cfg.ResultRetention}
	finals := outcome.NewListener(b.queueRDB)
	b.finals = finals
	return func() { _ = finals.Close() }, nil
}

// loadSecrets parses SECRETS_KEY, which opens what enqueuers sealed;
// without it secrets stored beside their tasks are in clear, which
// operators should hear once.
func (w *Worker) loadSecrets(b *wiring) error {
	keys, err := sidestore.ParseKeys(b.cfg.SecretsKey)
	if err != nil {
		return fmt.Errorf("SECRETS_KEY: %w", err) // config.Load refuses it first; never the value
	}
	b.secretKeys = keys
	if keys == nil {
		w.log.Warn("SECRETS_KEY is not set: per-export credentials and encryption passwords are stored in clear in Redis while their exports wait and run (its RDB/AOF files, replicas and MONITOR show them); set it on workers, then on every enqueuer")
	} else {
		w.log.Info("per-export secrets in Redis are sealed", "seal_key_id", keys.SealKeyID())
	}
	return nil
}

// newCallbacks makes the deliverer of callback tasks.
func (w *Worker) newCallbacks(b *wiring) func() {
	cfg := b.cfg
	callbackKeys, _ := spec.ParseCallbackSecrets(cfg.CallbackSecret) // checked by config.CheckWorker; none refuses deliveries
	b.callbacks = callback.New(callback.Config{Keys: callbackKeys, Allowed: cfg.CallbackAllowed,
		Timeout: cfg.CallbackTimeout, Logger: w.log, Observer: w.metrics})
	return b.callbacks.Close
}

// startDoorbell makes what idle queue servers wait on. Idle, each queue
// server waits on the doorbell every enqueue rings, and polls only every
// TASK_CHECK_INTERVAL besides (internal/queue/doorbell); without it, it only
// polls. Either way the idle polls are counted.
func (w *Worker) startDoorbell(b *wiring) func() {
	b.idleWait = func([]string) func(context.Context, time.Duration) { return doorbell.PollOnly(w.metrics) }
	if !b.cfg.TaskDoorbell {
		return nil
	}
	bell := doorbell.New(doorbell.Config{RDB: b.queueRDB, Observer: w.metrics, Logger: w.log})
	bell.Start()
	b.idleWait = func(queues []string) func(context.Context, time.Duration) { return bell.Waiter(queues...) }
	return bell.Close // after the queue servers stopped waiting on it
}

// newHandler is the pdf:export handler of one lane, on its renderer.
func (w *Worker) newHandler(b *wiring, renderer export.Renderer) (*export.Handler, error) {
	cfg, queueRDB := b.cfg, b.queueRDB
	return export.NewHandler(export.Config{Store: w.store, Renderer: renderer, Gate: b.gate, Workspace: b.workspace,
		Hosts:     spec.Hosts{Sources: cfg.Allowed, Callbacks: cfg.CallbackAllowed},
		Namespace: cfg.StorageURL, Logger: w.log, Observer: w.metrics, Hostname: w.opts.Hostname,
		SideStore:     &sidestore.Store{RDB: queueRDB, Keys: b.secretKeys}, // documents and secrets sent by reference live beside the tasks
		Finisher:      b.finisher,
		Cancellations: outcome.Cancels{RDB: queueRDB},
		Outcomes:      b.finals,
		PublicURL:     cfg.APIPublicURL,
		MaxPages:      cfg.RenderMaxPages, MaxBytes: cfg.RenderMaxBytes,
		ChapterConcurrency: cfg.RenderConcurrency,
		// A manual's chapters go to the fleet as tasks of their own; a
		// failed one is retried by the manual's next attempt too.
		ChapterTasks: chapterQueue{client: b.outcomes, rdb: queueRDB, retries: 2, timeout: cfg.TaskTimeout},
		Progress:     outcome.Progress{RDB: queueRDB},
		Sites:        b.sites,
	})
}

// newServers makes the queue servers of both lanes and their handlers,
// not started yet, and the base context of every task.
func (w *Worker) newServers(b *wiring) (func(), error) {
	cfg := b.cfg
	w.base, w.stopTask = context.WithCancelCause(w.opts.BaseContext)
	base := w.base
	undo := undos{func() { w.stopTask(ErrShuttingDown) }}
	// Each server gets a client of its own, as asynq.NewServer would make
	// it, but closed here: a server that never started (a later step
	// failed) does not close its client on Shutdown.
	newServer := func(queues map[string]int, concurrency int) *asynq.Server {
		rdb := b.queueOpt.MakeRedisClient().(redis.UniversalClient) // connectQueue checked the type
		undo = append(undo, func() { _ = rdb.Close() })
		return asynq.NewServerFromRedisClient(rdb, asynq.Config{
			Concurrency:       concurrency,
			Queues:            queues,
			TaskCheckInterval: cfg.TaskCheckInterval,
			IdleWait:          b.idleWait(slices.Sorted(maps.Keys(queues))), // one Waiter per server, with the queues it serves
			ShutdownTimeout:   cfg.ShutdownTimeout,
			RetryDelayFunc:    retryDelay,
			Logger:            logging.Asynq{L: w.log},
			LogLevel:          asynqLevel(cfg.LogLevel),
			BaseContext:       func() context.Context { return base },
		})
	}
	newMux := func(h *export.Handler) *asynq.ServeMux {
		mux := asynq.NewServeMux()
		mux.Use(w.track)
		mux.Use(w.opts.Middleware...)
		mux.Use(taskDeadline(cfg.TaskTimeout))
		mux.Handle(tasks.TypeExport, h)
		mux.Handle(tasks.TypeChapter, h.ChapterTasks())
		mux.Handle(tasks.TypeCallback, callbacktask.New(b.callbacks))
		return mux
	}
	handler, err := w.newHandler(b, b.renderer)
	if err != nil {
		return undo.run, err
	}
	var interactive map[string]int
	interactive, b.batch = lanes(cfg.QueueWeights, cfg.BatchQueueSet)
	w.srv = newServer(interactive, cfg.WorkerConcurrency)
	b.mux = newMux(handler)
	if len(b.batch) > 0 {
		// The batch lane: its own handler slots, and its own Chromium at a
		// lower CPU priority, so a catalogue re-render takes neither the
		// handler slots, the tabs nor the CPU of interactive exports. The
		// post-processing slot is the worker's, shared (memory is too).
		batchRenderer, closeBatch, err := w.batchRenderer(b.renderer)
		if closeBatch != nil {
			undo = append(undo, closeBatch)
		}
		if err != nil {
			return undo.run, err
		}
		batchHandler, err := w.newHandler(b, batchRenderer)
		if err != nil {
			return undo.run, err
		}
		w.batchSrv = newServer(b.batch, cfg.BatchConcurrency)
		b.batchMux = newMux(batchHandler)
	}
	return undo.run, nil
}

// openInspector makes the inspector that backs the queue metrics.
func (w *Worker) openInspector(b *wiring) func() {
	w.inspector = asynq.NewInspector(b.queueOpt)
	inspector := w.inspector
	w.metrics.WithQueueMetrics(inspector).WithQueues(slices.Sorted(maps.Keys(b.cfg.QueueWeights)))
	return func() { _ = inspector.Close() }
}

// serve starts the queue servers. Announced before (the announce step), so
// an enqueuer never sees this process's servers without it (it would take
// them for workers of a release before announcements).
//
// The undo shuts the servers down, which waits up to SHUTDOWN_TIMEOUT for
// tasks in flight and puts the unfinished ones back in the queue, but
// leaves their handlers running. Those are canceled then, and waited for:
// each releases its lease (as failed) while the lock Redis is still open,
// so another worker takes over at once rather than after LOCK_TTL. Both
// lanes shut down at once.
func (w *Worker) serve(b *wiring) (func(), error) {
	var servers []*asynq.Server
	undo := func() {
		shutdownAll(servers)
		w.stopTasks()
	}
	if err := w.srv.Start(b.mux); err != nil {
		return undo, fmt.Errorf("%w: starting the queue server: %w", ErrUnavailable, err)
	}
	servers = append(servers, w.srv)
	if w.batchSrv != nil {
		if err := w.batchSrv.Start(b.batchMux); err != nil {
			return undo, fmt.Errorf("%w: starting the batch lane's queue server: %w", ErrUnavailable, err)
		}
		servers = append(servers, w.batchSrv)
	}
	return undo, nil
}

// undos are undo functions, run last first.
type undos []func()

func (u undos) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// Shutdown stops taking tasks and lets those in flight finish for up to
// SHUTDOWN_TIMEOUT, then stops the admin server, closes Chromium and the
// Redis clients: the reverse of Start. It is safe after a failed Start and
// more than once.
func (w *Worker) Shutdown() {
	undo := w.undo
	w.undo = nil
	undo.run()
}

// track counts the tasks whose handler is running.
func (w *Worker) track(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		w.inflight.Add(1)
		defer w.inflight.Done()
		return next.ProcessTask(ctx, t)
	})
}

// stopTasks cancels the tasks still running and waits, at most handlerGrace,
// for their handlers to return.
func (w *Worker) stopTasks() {
	w.stopTask(ErrShuttingDown)
	done := make(chan struct{})
	go func() { w.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(handlerGrace):
		w.log.Warn("tasks still running after shutdown; their leases expire after LOCK_TTL", "waited", handlerGrace)
	}
}

// lanes splits the queues into the interactive lane's and the batch lane's
// (those of batchQueues). Without batch queues, or without any other, every
// queue is in one lane (returned as interactive).
func lanes(weights map[string]int, batchQueues []string) (interactive, batch map[string]int) {
	interactive, batch = map[string]int{}, map[string]int{}
	for q, wt := range weights {
		if slices.Contains(batchQueues, q) {
			batch[q] = wt
		} else {
			interactive[q] = wt
		}
	}
	if len(batch) == 0 || len(interactive) == 0 {
		return weights, nil
	}
	return interactive, batch
}

// batchRenderer is the batch lane's renderer: its own Chromium, started
// through nice(1) at BATCH_NICE on the first batch render, or the renderer
// that replaced Chromium (Options.Renderer); closeIt closes that Chromium.
func (w *Worker) batchRenderer(interactive export.Renderer) (_ export.Renderer, closeIt func(), _ error) {
	if w.opts.Renderer != nil {
		return interactive, nil, nil
	}
	cfg := w.cfg
	rcfg := w.chromium.Config()
	rcfg.Nice = cfg.BatchNice
	rcfg.Logger = w.log.With("lane", "batch")
	r, err := render.New(rcfg)
	if err != nil {
		return nil, nil, fmt.Errorf("configuring the batch lane's renderer: %w", err)
	}
	w.batch = r
	closeIt = func() {
		if err := r.Close(); err != nil {
			w.log.Warn("closing the batch lane's Chromium", "err", err)
		}
	}
	var out export.Renderer = r
	if w.opts.WrapRenderer != nil {
		out = w.opts.WrapRenderer(out)
	}
	return out, closeIt, nil
}

// shutdownAll shuts the queue servers down at once: each waits up to
// SHUTDOWN_TIMEOUT for its tasks.
func shutdownAll(servers []*asynq.Server) {
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.Shutdown)
	}
	wg.Wait()
}

// announce tells enqueuers which envelope versions this process serves
// (internal/queue/fleet), now and every fleet.Interval until its undo, which
// withdraws it once the queue servers stopped.
func (w *Worker) announce(ctx context.Context, rdb redis.UniversalClient) (func(), error) {
	self := fleet.Self(buildinfo.String(), slices.Sorted(maps.Keys(w.cfg.QueueWeights)))
	if err := fleet.Announce(ctx, rdb, self); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return w.background(func(ctx context.Context) {
		fleet.Run(ctx, rdb, self, func(err error) {
			w.log.Warn("refreshing this worker's announcement failed; retrying", "err", redact.Text(err.Error()))
		})
	}), nil
}

// sweepArchived finishes, in the background, exports archived without a
// final state (outcome.Sweeper), every Options.FinishSweepInterval until
// its undo.
func (w *Worker) sweepArchived(finisher *outcome.Finisher) func() {
	s := &outcome.Sweeper{Finisher: finisher, Queues: slices.Sorted(maps.Keys(w.cfg.QueueWeights)), Logger: w.log}
	interval := w.opts.FinishSweepInterval
	if interval <= 0 {
		interval = finishSweepInterval
	}
	return w.background(func(ctx context.Context) { s.Run(ctx, interval) })
}

// finishSweepInterval bounds how long an export archived without a final
// state (its worker lost, a dashboard action) keeps what it stored.
const finishSweepInterval = 5 * time.Second

// sweepTemp removes, in the background, temp files a crash left in the file
// store, at start and every sweepInterval, until its undo.
func (w *Worker) sweepTemp(files *storage.File) func() {
	return w.background(func(ctx context.Context) {
		t := time.NewTicker(sweepInterval)
		defer t.Stop()
		for {
			if n, err := files.RemoveStaleTemp(ctx, staleTempAge); err != nil && ctx.Err() == nil {
				w.log.Warn("removing stale temp files", "err", err)
			} else if n > 0 {
				w.log.Info("removed temp files left by a crash", "count", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// ownEndpoints are the endpoints of cfg a render must never reach: the
// admin address is added once it listens (startAdmin); bin/api's API_ADDR
// (the default one too: bin/api shares the workers' environment when
// co-located); every Redis the worker talks to; the S3 endpoint. The
// egress proxy adds its own listeners.
func ownEndpoints(cfg config.Config) (*allowlist.Reserved, error) {
	own := allowlist.NewReserved()
	add := func(what, hostport string) error {
		if _, err := own.Add(what, hostport); err != nil {
			return &config.Error{Vars: []config.VarError{{Var: what, Reason: err.Error()}}}
		}
		return nil
	}
	var errs []error
	if _, port, err := net.SplitHostPort(cfg.APIAddr); err == nil && port != "0" {
		errs = append(errs, add("API_ADDR", cfg.APIAddr))
	}
	for _, u := range []struct{ what, raw, port string }{
		{"REDIS_URL", cfg.RedisURL, "6379"},
		{"LOCK_REDIS_URL", cfg.LockRedisURL, "6379"},
		{"S3_ENDPOINT", cfg.S3Endpoint, ""},
	} {
		if hp := urlHostPort(u.raw, u.port); hp != "" {
			errs = append(errs, add(u.what, hp))
		}
	}
	for _, a := range cfg.RedisSentinelAddrs {
		errs = append(errs, add("REDIS_SENTINEL_ADDRS", strings.TrimSpace(a)))
	}
	for _, a := range cfg.RedisClusterAddrs {
		errs = append(errs, add("REDIS_CLUSTER_ADDRS", strings.TrimSpace(a)))
	}
	return own, errors.Join(errs...)
}

// urlHostPort is the host:port of a URL (redis://, rediss://, http(s)://),
// with defaultPort or the scheme's when it names none; "" for an empty or
// unparsable URL (config.Load refused those already).
func urlHostPort(raw, defaultPort string) string {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	switch {
	case port != "":
	case defaultPort != "":
		port = defaultPort
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// startAdmin listens on ADMIN_ADDR (none when empty) and serves health,
// readiness, metrics and the dashboard.
func (w *Worker) startAdmin(b *wiring) (func(), error) {
	cfg := w.cfg
	if cfg.AdminAddr == "" {
		return nil, nil
	}
	lockRDB := b.lockRDB
	checks := map[string]admin.Check{
		"redis":    func(ctx context.Context) error { return w.srv.Ping() },
		"locks":    func(ctx context.Context) error { return lockRDB.Ping(ctx).Err() },
		"storage":  w.store.Ping,
		"chromium": func(ctx context.Context) error { return nil },
	}
	if w.chromium != nil {
		checks["chromium"] = w.chromium.Ping
	}
	queueOpt := b.queueOpt
	var dashboard *admin.DashboardConfig
	if cfg.Dashboard {
		dashboard = &admin.DashboardConfig{Redis: queueOpt, User: cfg.DashboardUser, Password: cfg.DashboardPassword, ReadOnly: cfg.DashboardReadOnly}
	}
	ln, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: admin listener on ADMIN_ADDR=%s: %w", ErrUnavailable, cfg.AdminAddr, err)
	}
	// The bound address: ADMIN_ADDR may ask for port 0.
	if _, err := w.own.Add("ADMIN_ADDR", ln.Addr().String()); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	srv := &http.Server{
		Handler:           admin.Handler(admin.Config{Metrics: w.metrics, Checks: checks, Version: buildinfo.String(), Dashboard: dashboard}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error("admin server failed", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// taskDeadline bounds one attempt of a task, waiting for another worker's
// render included, whatever deadline the enqueuer set.
func taskDeadline(d time.Duration) asynq.MiddlewareFunc {
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next.ProcessTask(ctx, t)
		})
	}
}

// retryDelay backs off exponentially from 1s to 5m (exports) or 1h
// (callbacks: a receiver may be down for hours) with ±25 % jitter, so a
// fleet retrying after a shared outage does not return in lock-step.
func retryDelay(n int, _ error, t *asynq.Task) time.Duration {
	limit := 5 * time.Minute
	if t != nil && t.Type() == tasks.TypeCallback {
		limit = time.Hour
	}
	d := time.Second << min(n, 12)
	d = min(d, limit)
	jitter := time.Duration(rand.Int64N(int64(d) / 2))
	return d*3/4 + jitter
}

func asynqLevel(level string) asynq.LogLevel {
	switch strings.ToLower(level) {
	case "debug":
		return asynq.DebugLevel
	case "warn":
		return asynq.WarnLevel
	case "error":
		return asynq.ErrorLevel
	}
	return asynq.InfoLevel
}
