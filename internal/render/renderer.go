package render

// The public API: configuration, the Renderer, its lifecycle (New, Start,
// Ping, Close) and the current browser it hands to renders.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/render/egress"
)

// Config configures a Renderer. The zero value of every field but
// AllowedHosts is a usable default; a zero AllowedHosts allows no host, so only
// self-contained HTML renders.
type Config struct {
	// ChromiumPath is the browser binary. "" auto-detects (chromium.Find):
	// the headless shell (chromium-headless-shell, chrome-headless-shell)
	// first, then the full browser (/usr/lib/chromium/chromium, chromium,
	// chromium-browser, google-chrome, google-chrome-stable).
	ChromiumPath string
	// Concurrency is the most tabs that render at once (RENDER_CONCURRENCY).
	// Default 2.
	Concurrency int
	// Timeout bounds one render from opening its tab until the sink returns
	// (RENDER_TIMEOUT). Waiting for a free tab is not included; the caller's
	// context bounds that. Default 60s.
	Timeout time.Duration
	// MaxRendersPerBrowser recycles the browser after that many renders
	// (RENDER_MAX_PER_BROWSER); the old one stops once its renders end.
	// Default 100.
	MaxRendersPerBrowser int
	// MaxPages and MaxBytes cut a PDF off once it has more pages or bytes
	// (RENDER_MAX_PAGES, RENDER_MAX_BYTES); the render fails with ErrLimit.
	// 0: no limit.
	MaxPages int
	MaxBytes int64
	// AllowedHosts are the hosts the page and its sub-requests may reach.
	// Its Reserved endpoints (the worker's own, List.WithReserved) are
	// refused whatever it allows; the egress proxy adds its listeners to
	// them.
	AllowedHosts allowlist.List
	// StartTimeout bounds a browser start. Default 20s.
	StartTimeout time.Duration
	// Logger receives lifecycle events. nil means slog.Default().
	Logger *slog.Logger
	// SourceAuth gives the requests of matching hosts their credentials
	// (SOURCE_AUTH_FILE: sourceauth.Watcher). nil: none.
	SourceAuth egress.Credentials
	// Observer receives render outcomes and browser restarts for metrics.
	// nil means none.
	Observer Observer
	// Nice starts Chromium, and so every process and thread of it, at this
	// nice value (0-19; the worker's batch lane: BATCH_NICE), through
	// nice(1), and without CAP_SYS_NICE (nice.go): under CPU contention the
	// renders of a browser at nice 0 go first. 0: the worker's own
	// priority.
	Nice int
	// TempDir holds each browser's user data directory and is Chromium's
	// TMPDIR: the worker's private directory (export.Workspace), so that
	// what a killed Chromium left goes with it. "": chromedp's own
	// directory in os.TempDir(), removed when the browser stops.
	TempDir string
}

// Observer receives render events for metrics. Implementations must be fast.
type Observer interface {
	// RenderDone is called once per Render: result is "ok", "timeout"
	// (ErrTimeout) or "error"; d is Stats.Duration.
	RenderDone(result string, d time.Duration)
	// BrowserRestarted is called for every browser start after the first:
	// replacing a crashed browser or recycling one (MaxRendersPerBrowser).
	BrowserRestarted()
}

// StatsObserver is an optional extension of Observer: an Observer that also
// implements it gets the Stats of every Render (queue wait, pages, bytes),
// right after RenderDone and with the same result.
type StatsObserver interface {
	RenderStats(result string, st Stats)
}

// WarningObserver is an optional extension of Observer: it hears of every
// warning a render collects (kind: resource, blocked, console), listed in
// Stats.Warnings or not.
type WarningObserver interface {
	RenderWarning(kind string)
}

type nopObserver struct{}

func (nopObserver) RenderDone(string, time.Duration) {}

func (nopObserver) BrowserRestarted() {}

// testHooks change a Renderer for tests and benchmarks only; production
// code never sets them. Each one injects a fault or observes a render.
type testHooks struct {
	// proxy are seams of the egress proxy (resolver, dialler, refusals).
	proxy egress.Options
	// skipTabGuard disables the tab-level guard so tests can prove the
	// proxy alone holds.
	skipTabGuard bool
	// trustSPKI are keys Chromium also accepts without a valid chain
	// (test servers that stand in for sites with public certificates).
	trustSPKI []string
	// sessionIdle, if set, replaces sessionIdle (tests of its expiry).
	sessionIdle time.Duration
	// printed, if set, is called with the tab of a render once its PDF is
	// streamed, before the tab closes (tests read the page's state).
	printed func(ctx context.Context, t *chromedp.Target)
	// noFrameControlFlag starts the headless shell without the flag that
	// BeginFrame control needs while its tabs are still created under it,
	// so that Chromium refuses their BeginFrames (the fallback's test).
	noFrameControlFlag bool
	// mark, if set, is called as a render passes each step of its path
	// (BenchmarkRenderBreakdown times and costs the steps).
	mark func(step string)
}

// mark reports a step of a render to the benchmark hook.
func (r *Renderer) mark(step string) {
	if r.hooks.mark != nil {
		r.hooks.mark(step)
	}
}

// Defaults of Config.
const (
	DefaultConcurrency          = 2
	DefaultTimeout              = 60 * time.Second
	DefaultMaxRendersPerBrowser = 100
	DefaultStartTimeout         = 20 * time.Second
)

// FindChromium returns the browser binary New uses when Config.ChromiumPath
// is empty (chromium.Find: the headless shell first, then the full browser).
func FindChromium() (string, error) { return chromium.Find() }

// Renderer renders pages to PDF with one supervised Chromium. It is safe for
// concurrent use.
type Renderer struct {
	cfg Config
	log *slog.Logger

	sem  chan struct{} // one token per tab that may render
	nice niceCommand   // how the browser starts, when Config.Nice > 0

	// lock guards cur. It is a channel so that waiting for it (while
	// another goroutine starts the browser) honours a context.
	lock chan struct{}
	cur  *browser

	// mu orders renders.Add against Close: no render registers after
	// closing is canceled.
	mu          sync.Mutex
	closing     context.Context // canceled with ErrClosed by Close
	closeCancel context.CancelCauseFunc

	renders sync.WaitGroup // Render calls in flight
	bg      sync.WaitGroup // browser stops in flight

	// proxy is the egress proxy (guard, second layer), started with the
	// first browser (under lock) and stopped by Close; set once.
	proxy atomic.Pointer[egress.Proxy]
	// hooks are the seams of tests and benchmarks; set them before the
	// first browser starts.
	hooks testHooks

	// spare is the next render's browser context and tab, made ahead
	// (spare.go); preparing is set while one is being made, by a goroutine
	// of prep.
	spareMu   sync.Mutex
	spare     *spareTab
	preparing bool
	prep      sync.WaitGroup

	// sessions are the idle browser contexts of sessions (session.go),
	// oldest first; parked counts them until taken or ended.
	sessMu   sync.Mutex
	sessions []*sessionContext
	parked   sync.WaitGroup

	pids     []int        // main process of every browser started (under lock), for tests
	starts   atomic.Int64 // browsers started
	restarts atomic.Int64 // browsers started to replace a crashed one
	tabs     atomic.Int32 // tabs open now
	maxTabs  atomic.Int32 // most tabs open at once
}

// New validates cfg and returns a Renderer. It does not start Chromium: Start
// or the first Render does.
func New(cfg Config) (*Renderer, error) {
	var errs []error
	if cfg.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency %d: must be >= 1 (0 means %d)", cfg.Concurrency, DefaultConcurrency))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v: must be > 0", cfg.Timeout))
	}
	if cfg.MaxRendersPerBrowser < 0 {
		errs = append(errs, fmt.Errorf("max renders per browser %d: must be >= 1 (0 means %d)", cfg.MaxRendersPerBrowser, DefaultMaxRendersPerBrowser))
	}
	if cfg.MaxPages < 0 || cfg.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("max pages %d, max bytes %d: must be >= 0 (0: no limit)", cfg.MaxPages, cfg.MaxBytes))
	}
	if cfg.StartTimeout < 0 {
		errs = append(errs, fmt.Errorf("start timeout %v: must be > 0", cfg.StartTimeout))
	}
	if cfg.AllowedHosts.Reserved() == nil {
		// The tab guard and the egress proxy share one set, so the guard
		// refuses the proxy's own listeners too.
		cfg.AllowedHosts = cfg.AllowedHosts.WithReserved(allowlist.NewReserved())
	}
	if cfg.ChromiumPath == "" {
		p, err := FindChromium()
		if err != nil {
			errs = append(errs, err)
		}
		cfg.ChromiumPath = p
	} else if p, err := exec.LookPath(cfg.ChromiumPath); err != nil {
		errs = append(errs, fmt.Errorf("chromium path %q: %w", cfg.ChromiumPath, err))
	} else {
		cfg.ChromiumPath = p
	}
	var nice niceCommand
	switch {
	case cfg.Nice < 0 || cfg.Nice > 19:
		errs = append(errs, fmt.Errorf("nice %d: must be between 0 and 19", cfg.Nice))
	case cfg.Nice > 0:
		var err error
		if nice, err = findNiceCommand(); err != nil {
			errs = append(errs, fmt.Errorf("nice %d: %w", cfg.Nice, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRendersPerBrowser == 0 {
		cfg.MaxRendersPerBrowser = DefaultMaxRendersPerBrowser
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	r := &Renderer{
		cfg:  cfg,
		nice: nice,
		log:  cfg.Logger.With("component", "render"),
		sem:  make(chan struct{}, cfg.Concurrency),
		lock: make(chan struct{}, 1),
	}
	r.closing, r.closeCancel = context.WithCancelCause(context.Background())
	return r, nil
}

// Start starts Chromium now unless it runs already. The worker calls it at
// boot so that a missing or broken browser shows before the first task.
func (r *Renderer) Start(ctx context.Context) error {
	_, release, err := r.acquire(ctx, false)
	if err != nil {
		return err
	}
	release()
	return nil
}

// Ping checks that the browser answers (Browser.getVersion). It fails when the
// browser was never started, has crashed, or the Renderer is closed.
func (r *Renderer) Ping(ctx context.Context) error {
	if err := r.lockCtx(ctx); err != nil {
		return err
	}
	b := r.cur
	r.unlock()
	switch {
	case r.closing.Err() != nil:
		return ErrClosed
	case b == nil:
		return errors.New("render: browser not started")
	case b.dead():
		return fmt.Errorf("%w: browser exited (pid %d)", ErrBrowserCrashed, b.pid)
	}
	if _, err := cdp.Call(ctx, b.session(), cdpbrowser.GetVersion, cdp.Empty{}); err != nil {
		if b.dead() {
			return fmt.Errorf("%w: %v", ErrBrowserCrashed, err)
		}
		return fmt.Errorf("render: browser ping: %w", err)
	}
	return nil
}

// Close cancels renders in flight (they fail with ErrClosed), stops Chromium
// and waits until every process and goroutine it started is gone. It is safe
// to call more than once.
func (r *Renderer) Close() error {
	r.mu.Lock()
	already := r.closing.Err() != nil
	r.closeCancel(ErrClosed) // also interrupts a browser start holding lock
	r.mu.Unlock()
	if already {
		r.bg.Wait()
		return nil
	}
	r.lock <- struct{}{}
	b := r.cur
	r.cur = nil
	r.unlock()

	r.renders.Wait()
	r.dropSpare()    // its reference would keep the browser
	r.dropSessions() // theirs too
	if b != nil {
		r.dropRef(b)
	}
	r.bg.Wait()
	r.lock <- struct{}{} // a start that Close interrupted has returned
	r.unlock()
	if p := r.proxy.Load(); p != nil {
		p.Close()
	}
	return nil
}

// EgressRefused is how many connections the egress proxy refused (requests
// of pages, their frames and workers, and Chromium's own background traffic)
// since the Renderer started.
func (r *Renderer) EgressRefused() int64 {
	if p := r.proxy.Load(); p != nil {
		return p.Refused()
	}
	return 0
}

// Restarts is how many browsers were started to replace one that died
// (pdfexport_browser_restarts_total). Recycling does not count.
func (r *Renderer) Restarts() int64 { return r.restarts.Load() }

func (r *Renderer) lockCtx(ctx context.Context) error {
	select {
	case r.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-r.closing.Done():
		return ErrClosed
	}
}

func (r *Renderer) unlock() { <-r.lock }

// acquire returns the current browser, starting one if there is none, it died
// or it was retired, and takes a reference that release drops. countRender
// counts the use towards MaxRendersPerBrowser.
func (r *Renderer) acquire(ctx context.Context, countRender bool) (*browser, func(), error) {
	if err := r.lockCtx(ctx); err != nil {
		return nil, nil, err
	}
	defer r.unlock()
	if r.closing.Err() != nil {
		return nil, nil, ErrClosed
	}
	if b := r.cur; b != nil && b.dead() {
		r.log.Warn("browser died, starting a new one", "pid", b.pid)
		b.retired.Store(true)
		r.cur = nil
		r.dropRef(b)
		r.restarts.Add(1)
	}
	if r.cur == nil {
		b, err := r.startBrowser(ctx)
		if err != nil {
			return nil, nil, err
		}
		r.cur = b
	}
	b := r.cur
	b.refs.Add(1)
	if countRender {
		if n := b.renders.Add(1); n >= int64(r.cfg.MaxRendersPerBrowser) {
			// Retire: later renders get a new browser; this one stops when
			// its last render releases it.
			r.log.Info("recycling browser", "pid", b.pid, "renders", n)
			b.retired.Store(true)
			r.cur = nil
			r.dropRef(b)
		}
	}
	var once sync.Once
	return b, func() { once.Do(func() { r.dropRef(b) }) }, nil
}

// dropRef releases one reference; the last one stops the browser in the
// background (Close waits for it).
func (r *Renderer) dropRef(b *browser) {
	if b.refs.Add(-1) == 0 {
		r.bg.Go(func() { b.stop(r.log) })
	}
}

// Config is the configuration the Renderer runs with, defaults filled in
// (a second Renderer made from it renders the same way).
func (r *Renderer) Config() Config { return r.cfg }
