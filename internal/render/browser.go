package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/allowlist"
	"github.com/pdfexport/pdfexport/internal/chromium"
	"github.com/pdfexport/pdfexport/internal/proctree"
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
	// AllowedHosts are the hosts the page and its sub-requests may reach.
	AllowedHosts allowlist.List
	// StartTimeout bounds a browser start. Default 20s.
	StartTimeout time.Duration
	// Logger receives lifecycle events. nil means slog.Default().
	Logger *slog.Logger
	// Observer receives render outcomes and browser restarts for metrics.
	// nil means none.
	Observer Observer
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

type nopObserver struct{}

func (nopObserver) RenderDone(string, time.Duration) {}
func (nopObserver) BrowserRestarted()                {}

// tabDesign is how a render gets its tab. Measured on this machine
// (BenchmarkTabDesign: a 3-page page from a local server, 2 cores, lightly
// loaded, medians): tab lifecycle plus print ≈ 260 ms with a fresh browser
// context per render, ≈ 155 ms with a new tab in the shared context, ≈ 105 ms
// with one warm tab reset between renders (about:blank, clear cookies, cache
// and the origin's storage), ≈ 700 ms with a new browser; a full Render ≈
// 590 ms vs ≈ 475 ms in the shared context. Only the context per render
// isolates by construction: the shared context keeps cookies, storage,
// service workers and the HTTP cache (TestRender_RendersAreIsolated shows the
// leak), and a warm-tab reset must name every origin a render touched,
// including those of out-of-process frames and workers that the tab never
// sees. So a render pays ≈ 0.1 s for isolation.
type tabDesign int

const (
	designContextPerRender tabDesign = iota // default: new browser context and tab per render
	designSharedContext                     // new tab in the browser's default context (not isolated)
)

// Defaults of Config.
const (
	DefaultConcurrency          = 2
	DefaultTimeout              = 60 * time.Second
	DefaultMaxRendersPerBrowser = 100
	DefaultStartTimeout         = 20 * time.Second
)

// disabledFeatures are the Chromium features every browser starts without.
// The first two are chromedp's defaults (the flag replaces its list). The
// others start web UI of the full browser for each new window: the omnibox
// popup and its AI-mode variant, two renderer processes per window, and the
// preloading of such UI. A browser context per render opens a window per
// render, so they doubled the CPU of a render (measured on the Go
// specification: 1.8–1.9 CPU-s with them, 0.94 without, 0.85–0.9 for a tab in
// the shared context). The headless shell has no browser UI; for it they
// are no-ops. TestRender_StartsNoBrowserUI fails when a Chromium starts such
// UI under another name.
var disabledFeatures = []string{
	"Translate", "BlinkGenPropertyTrees",
	"WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "PreloadTopChromeWebUI",
}

// devShm is where Chromium keeps its shared memory unless told not to.
const devShm = "/dev/shm"

// minDevShmFree is the free space of /dev/shm from which Chromium may use it.
// Docker's default of 64 MiB is too small for large pages and crashes
// renderers, which is why chromedp turns /dev/shm off by default; its
// fallback keeps shared memory in files under /tmp, on a disk.
const minDevShmFree = 512 << 20

// shmUsable reports whether dir is a tmpfs with at least minDevShmFree free.
func shmUsable(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	const tmpfsMagic = 0x01021994
	return st.Type == tmpfsMagic && st.Bavail*uint64(st.Bsize) >= minDevShmFree
}

// stopTimeout bounds the graceful Browser.close before the process is killed.
const stopTimeout = 3 * time.Second

// FindChromium returns the browser binary New uses when Config.ChromiumPath
// is empty (chromium.Find: the headless shell first, then the full browser).
func FindChromium() (string, error) { return chromium.Find() }

// Renderer renders pages to PDF with one supervised Chromium. It is safe for
// concurrent use.
type Renderer struct {
	cfg Config
	log *slog.Logger

	sem chan struct{} // one token per tab that may render

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
	proxy atomic.Pointer[egressProxy]
	// proxyOpts are test seams of the proxy (resolver, dialler); set them
	// before the first browser starts.
	proxyOpts egressOptions
	// design is how a render gets its tab (tests and benchmarks compare).
	design tabDesign
	// skipTabGuard disables the tab-level guard so tests can prove the
	// proxy alone holds.
	skipTabGuard bool
	// keepChromedpDomains skips leanTab (BenchmarkRenderDesign compares).
	keepChromedpDomains bool

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
	if cfg.StartTimeout < 0 {
		errs = append(errs, fmt.Errorf("start timeout %v: must be > 0", cfg.StartTimeout))
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
	if b != nil {
		r.dropRef(b)
	}
	r.bg.Wait()
	r.lock <- struct{}{} // a start that Close interrupted has returned
	r.unlock()
	if p := r.proxy.Load(); p != nil {
		p.close()
	}
	return nil
}

// EgressRefused is how many connections the egress proxy refused (requests
// of pages, their frames and workers, and Chromium's own background traffic)
// since the Renderer started.
func (r *Renderer) EgressRefused() int64 {
	if p := r.proxy.Load(); p != nil {
		return p.refused.Load()
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

// browser is one Chromium process and its DevTools connection.
type browser struct {
	ctx     context.Context // chromedp browser context (first context)
	cancel  context.CancelFunc
	kill    context.CancelFunc // raw cancel of the root: SIGKILLs the process
	alloc   context.CancelFunc // allocator cancel: waits for its cleanup
	lost    <-chan struct{}    // closed when the DevTools connection drops
	reaped  chan struct{}      // closed when stop finished
	pid     int
	dataDir string
	version string

	refs     atomic.Int64 // the Renderer's own (while current) + renders in flight
	renders  atomic.Int64 // renders started on this browser
	stopping atomic.Bool
	stopOnce sync.Once

	cmdMu sync.Mutex
	cmd   *exec.Cmd
}

// startBrowser starts Chromium. The first Run of the browser context gets no
// deadline (that would kill the browser later); ctx and StartTimeout bound the
// start by killing the process instead.
func (r *Renderer) startBrowser(ctx context.Context) (*browser, error) {
	started := time.Now()
	if r.proxy.Load() == nil {
		o := r.proxyOpts
		if o.upstreamHeader == 0 {
			o.upstreamHeader = r.cfg.Timeout // no render waits longer
		}
		p, err := startEgressProxy(r.cfg.AllowedHosts, r.log, o)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBrowserCrashed, err)
		}
		r.proxy.Store(p)
		r.log.Debug("egress proxy listening", "addr", p.addr())
	}
	b := &browser{reaped: make(chan struct{})}
	b.refs.Store(1)
	root, kill := context.WithCancel(context.Background())
	b.kill = kill

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(r.cfg.ChromiumPath),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", !shmUsable(devShm)),
		chromedp.Flag("disable-crash-reporter", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("headless", true),
		chromedp.Flag("disable-features", strings.Join(disabledFeatures, ",")),
		// Every request, loopback included, goes through the egress proxy.
		chromedp.ProxyServer("http://"+r.proxy.Load().addr()),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		// WebRTC may not send UDP, which no HTTP proxy sees.
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			// Own process group so Close can kill every leftover child;
			// Pdeathsig as chromedp's default does, should we die first.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			b.cmdMu.Lock()
			b.cmd = cmd
			b.cmdMu.Unlock()
		}),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, allocCancel := chromedp.NewExecAllocator(root, opts...)
	b.alloc = allocCancel
	logf := func(format string, args ...any) { r.log.Debug("chromedp: " + fmt.Sprintf(format, args...)) }
	b.ctx, b.cancel = chromedp.NewContext(allocCtx, chromedp.WithBrowserOption(
		chromedp.WithBrowserLogf(logf), chromedp.WithBrowserErrorf(logf)))

	stopCtxWatch := context.AfterFunc(ctx, kill)
	stopClosingWatch := context.AfterFunc(r.closing, kill)
	timer := time.AfterFunc(r.cfg.StartTimeout, kill)
	err := chromedp.Do(b.ctx) // allocates the browser and attaches its first tab
	var ver cdpbrowser.GetVersionResult
	if err == nil {
		ver, err = chromedp.CallBrowser(b.ctx, cdpbrowser.GetVersion, cdp.Empty{})
	}
	watchersIdle := stopCtxWatch() && stopClosingWatch() && timer.Stop()
	if err == nil && !watchersIdle {
		err = errors.New("start was interrupted")
	}
	if err != nil {
		b.stop(r.log)
		switch {
		case r.closing.Err() != nil:
			return nil, ErrClosed
		case ctx.Err() != nil:
			return nil, fmt.Errorf("render: starting chromium: %w", context.Cause(ctx))
		case root.Err() != nil:
			return nil, fmt.Errorf("%w: chromium did not start within %v", ErrBrowserCrashed, r.cfg.StartTimeout)
		}
		return nil, fmt.Errorf("%w: starting chromium %s: %v", ErrBrowserCrashed, r.cfg.ChromiumPath, err)
	}
	cb := chromedp.FromContext(b.ctx).Browser
	b.lost = cb.LostConnection
	if p := cb.Process(); p != nil {
		b.pid = p.Pid
	}
	b.cmdMu.Lock()
	for _, a := range b.cmd.Args {
		if d, ok := strings.CutPrefix(a, "--user-data-dir="); ok {
			b.dataDir = d
		}
	}
	b.cmdMu.Unlock()
	b.version = ver.Product
	r.pids = append(r.pids, b.pid)
	if r.starts.Add(1) > 1 {
		r.cfg.Observer.BrowserRestarted()
		r.log.Info("browser started", "pid", b.pid, "version", b.version, "took", time.Since(started))
	} else {
		r.log.Info("browser started", "pid", b.pid, "version", b.version, "took", time.Since(started), "path", r.cfg.ChromiumPath, "dev_shm", shmUsable(devShm))
	}
	return b, nil
}

// session is the browser-level DevTools session.
func (b *browser) session() *chromedp.Browser { return chromedp.FromContext(b.ctx).Browser }

// dead reports whether the browser exited or lost its connection without
// being asked to stop.
func (b *browser) dead() bool {
	if b.stopping.Load() {
		return false
	}
	select {
	case <-b.lost:
		return true
	default:
		return b.ctx.Err() != nil
	}
}

// stop closes the browser gracefully (bounded by stopTimeout), then kills what
// is left: the process, its process group and anything still using its user
// data directory, and removes that directory. It is idempotent.
func (b *browser) stop(log *slog.Logger) {
	b.stopOnce.Do(func() {
		defer close(b.reaped)
		b.stopping.Store(true)
		if b.lost != nil && b.ctx.Err() == nil {
			select {
			case <-b.lost:
			default:
				ctx, cancel := context.WithTimeout(b.ctx, stopTimeout)
				if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
					log.Debug("graceful browser close failed", "pid", b.pid, "err", err)
				}
				cancel()
			}
		}
		b.kill()
		b.cancel() // waits for the tab watcher and the process to exit
		b.alloc()  // waits for the allocator's cleanup (leftovers, data dir)
		pgid := b.pid
		b.cmdMu.Lock()
		if b.cmd != nil && b.cmd.Process != nil {
			pgid = b.cmd.Process.Pid
		}
		dir := b.dataDir
		if dir == "" && b.cmd != nil {
			for _, a := range b.cmd.Args {
				if d, ok := strings.CutPrefix(a, "--user-data-dir="); ok {
					dir = d
				}
			}
		}
		b.cmdMu.Unlock()
		if n := killStragglers(pgid, dir); n > 0 {
			log.Warn("killed leftover chromium processes", "count", n, "pgid", pgid)
		}
		if dir != "" {
			if err := os.RemoveAll(dir); err != nil {
				log.Warn("removing chromium user data dir", "dir", dir, "err", err)
			}
		}
	})
}

// killStragglers SIGKILLs, until none is left (bounded), every process in
// process group pgid or whose command line names user data dir dir. It
// returns how many it found.
func killStragglers(pgid int, dir string) int {
	total := 0
	for range 50 {
		pids := chromiumPIDs(pgid, dir)
		if len(pids) == 0 {
			return total
		}
		total += len(pids)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return total
}

// chromiumPIDs lists live (not zombie) processes in group pgid or with
// --user-data-dir=dir on their command line.
func chromiumPIDs(pgid int, dir string) []int {
	self := os.Getpid()
	want := "--user-data-dir=" + dir
	var pids []int
	for _, p := range proctree.Live() {
		switch {
		case p.PID == self:
		case pgid > 0 && p.PGID == pgid:
			pids = append(pids, p.PID)
		case dir != "" && slices.Contains(proctree.Cmdline(p.PID), want):
			pids = append(pids, p.PID)
		}
	}
	return pids
}
