package render

// The browser process: its flags, start, health, and a stop that leaves no
// process or data directory behind.

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
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
)

// disabledFeatures are the Chromium features every browser starts without.
// The first two are chromedp's defaults (the flag replaces its list). The
// others start web UI of the full browser for each new window: the omnibox
// popup and its AI-mode variant, two renderer processes per window, and the
// preloading of such UI. A browser context per render opens a window per
// render, so with them every render would start renderers it never uses.
// The headless shell has no browser UI; for it they are no-ops.
// TestRender_StartsNoBrowserUI fails when a Chromium starts such UI under
// another name.
var disabledFeatures = []string{
	"Translate", "BlinkGenPropertyTrees",
	"WebUIOmniboxPopup", "WebUIOmniboxAimPopup", "PreloadTopChromeWebUI",
}

// devShm is where Chromium keeps its shared memory unless told not to.
const devShm = "/dev/shm"

// minDevShmFree is the free space of /dev/shm from which Chromium may use it.
// Docker's default /dev/shm is too small for large pages and crashes
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
	retired  atomic.Bool // no longer the Renderer's current browser: no spare tab for it
	// frameControl: new tabs are created under BeginFrame control and
	// renders drive their frames (frames.go).
	frameControl atomic.Bool
	frameMu      sync.Mutex // one BeginFrame in flight per browser
	stopOnce     sync.Once

	cmdMu sync.Mutex
	cmd   *exec.Cmd
}

// startBrowser starts Chromium, and the egress proxy its requests go
// through first. The first Run of the browser context gets no deadline
// (that would kill the browser later); ctx and StartTimeout bound the start
// by killing the process instead.
func (r *Renderer) startBrowser(ctx context.Context) (*browser, error) {
	started := time.Now()
	if err := r.ensureProxy(); err != nil {
		return nil, err
	}
	b := &browser{reaped: make(chan struct{})}
	b.refs.Store(1)
	root, kill := context.WithCancel(context.Background())
	b.kill = kill
	opts, err := r.browserOptions(b)
	if err != nil {
		kill()
		return nil, err
	}
	ver, err := r.launch(ctx, b, root, opts)
	if err != nil {
		return nil, err
	}
	r.started(b, ver, started)
	return b, nil
}

// ensureProxy starts the egress proxy with the first browser.
func (r *Renderer) ensureProxy() error {
	if r.proxy.Load() != nil {
		return nil
	}
	o := r.hooks.proxy
	if o.UpstreamHeader == 0 {
		o.UpstreamHeader = r.cfg.Timeout // no render waits longer
	}
	if o.Admit == nil {
		o.Admit = egress.NewPeerGuard().Admits // only the worker's browsers may use it
	}
	p, err := egress.StartProxy(r.cfg.AllowedHosts, r.log, r.cfg.SourceAuth, o)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBrowserCrashed, err)
	}
	r.proxy.Store(p)
	r.log.Debug("egress proxy listening", "addr", p.Addr())
	return nil
}

// browserOptions are the allocator options of browser b: its flags, its
// process group and nice value, and its user data directory under
// Config.TempDir.
func (r *Renderer) browserOptions(b *browser) ([]chromedp.ExecAllocatorOption, error) {
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
		chromedp.ProxyServer("http://"+r.proxy.Load().Addr()),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		// The proxy opens the HTTPS tunnels of hosts with source
		// credentials with certificates made from its key (internal/render/egress);
		// only that key is accepted in place of a valid chain.
		chromedp.Flag("ignore-certificate-errors-spki-list", strings.Join(append([]string{r.proxy.Load().SPKI()}, r.hooks.trustSPKI...), ",")),
		// WebRTC may not send UDP, which no HTTP proxy sees.
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		// A new tab goes into a running renderer process of its browser
		// context when there is one (never one of another context): a
		// session's next tab shares its renderer with the last (session.go).
		chromedp.Flag("renderer-process-limit", "1"),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) { r.modifyCmd(b, cmd) }),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	// Only the headless shell has BeginFrame control.
	if chromium.IsHeadlessShell(r.cfg.ChromiumPath) && !r.hooks.noFrameControlFlag {
		opts = append(opts, chromedp.Flag(frameControlFlag, true))
	}
	if r.cfg.TempDir != "" {
		dir, err := os.MkdirTemp(r.cfg.TempDir, "chromium-")
		if err != nil {
			return nil, fmt.Errorf("%w: the user data directory: %w", ErrBrowserCrashed, err)
		}
		b.dataDir = dir // stop removes it
		opts = append(opts, chromedp.UserDataDir(dir), chromedp.Env("TMPDIR="+r.cfg.TempDir))
	}
	return opts, nil
}

// modifyCmd puts the browser's process in a group of its own, so that Close
// can kill every leftover child, with Pdeathsig as chromedp's default does,
// should we die first; and under nice(1) when Config.Nice asks.
func (r *Renderer) modifyCmd(b *browser, cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if r.nice.nice != "" {
		// setpriv(1) and nice(1) exec Chromium in their own process: the
		// same pid, and every child forked from then on inherits the
		// value (and lacks CAP_SYS_NICE).
		cmd.Args = r.nice.wrap(r.cfg.Nice, append([]string{cmd.Path}, cmd.Args[1:]...))
		cmd.Path = cmd.Args[0]
	}
	b.cmdMu.Lock()
	b.cmd = cmd
	b.cmdMu.Unlock()
}

// launch starts the browser process under root and connects to it, bounded
// by ctx, Close and StartTimeout, each of which kills the process; it
// returns the browser's version. A failed start stops what it began.
func (r *Renderer) launch(ctx context.Context, b *browser, root context.Context, opts []chromedp.ExecAllocatorOption) (string, error) {
	allocCtx, allocCancel := chromedp.NewExecAllocator(root, opts...)
	b.alloc = allocCancel
	logf := func(format string, args ...any) { r.log.Debug("chromedp: " + fmt.Sprintf(format, args...)) }
	b.ctx, b.cancel = chromedp.NewContext(allocCtx, chromedp.WithBrowserOption(
		chromedp.WithBrowserLogf(logf), chromedp.WithBrowserErrorf(logf)))

	stopCtxWatch := context.AfterFunc(ctx, b.kill)
	stopClosingWatch := context.AfterFunc(r.closing, b.kill)
	timer := time.AfterFunc(r.cfg.StartTimeout, b.kill)
	err := chromedp.Do(b.ctx) // allocates the browser and attaches its first tab
	var ver cdpbrowser.GetVersionResult
	if err == nil {
		ver, err = chromedp.CallBrowser(b.ctx, cdpbrowser.GetVersion, cdp.Empty{})
	}
	watchersIdle := stopCtxWatch() && stopClosingWatch() && timer.Stop()
	if err == nil && !watchersIdle {
		err = errors.New("start was interrupted")
	}
	if err == nil {
		return ver.Product, nil
	}
	b.stop(r.log)
	switch {
	case r.closing.Err() != nil:
		return "", ErrClosed
	case ctx.Err() != nil:
		return "", fmt.Errorf("render: starting chromium: %w", context.Cause(ctx))
	case root.Err() != nil:
		return "", fmt.Errorf("%w: chromium did not start within %v", ErrBrowserCrashed, r.cfg.StartTimeout)
	}
	return "", fmt.Errorf("%w: starting chromium %s: %v", ErrBrowserCrashed, r.cfg.ChromiumPath, err)
}

// started records a browser that started: its process, data directory,
// version and BeginFrame control, and logs it.
func (r *Renderer) started(b *browser, version string, began time.Time) {
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
	b.version = version
	b.frameControl.Store(chromium.IsHeadlessShell(r.cfg.ChromiumPath))
	r.pids = append(r.pids, b.pid)
	if r.starts.Add(1) > 1 {
		r.cfg.Observer.BrowserRestarted()
		r.log.Info("browser started", "pid", b.pid, "version", b.version, "took", time.Since(began))
	} else {
		r.log.Info("browser started", "pid", b.pid, "version", b.version, "took", time.Since(began), "path", r.cfg.ChromiumPath, "dev_shm", shmUsable(devShm))
	}
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
