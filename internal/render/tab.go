package render

// The first stage of a render: its tab, in a browser context of its own (or
// of its session), taken ready from a spare or a session when there is one,
// and given back at the end.

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// renderTab is a render's tab from openTab until release.
type renderTab struct {
	r *Renderer
	b *browser
	w *pageWatch
	// ctx is the tab's chromedp context; closeTab cancels it, which
	// closes the tab.
	ctx      context.Context
	closeTab context.CancelFunc
	// frames: the tab is under BeginFrame control (frames.go).
	frames bool
	// made: the tab was made ahead (a spare or a session's next tab),
	// attached and prepared already.
	made bool
	// sc is the session the tab's context belongs to (inSession), nil for
	// a context of the render's own, which dispose ends.
	sc        *sessionContext
	inSession bool
	dispose   func()
	closeAuth func() // closes the context's own proxy listener, if it has one
	// frameKeys are the storage keys of the page's frames as it closed.
	frameKeys []string
}

// openTab gives a render its tab (not attached yet, unless made ahead). A
// render with per-export credentials gets a context with its own proxy
// listener; a session's render, on the headless shell, the session's
// context (session.go), where only the headless shell keeps every frame in
// the page's process, where the reset between a session's renders finds
// their storage; any other render a context of its own, made ahead when
// it can be.
func (r *Renderer) openTab(b *browser, o tabOptions) (*renderTab, error) {
	tb := &renderTab{r: r, b: b}
	ownProxy := !o.auth.Empty() && o.url != ""
	tb.inSession = o.session != "" && !ownProxy && chromium.IsHeadlessShell(r.cfg.ChromiumPath)
	var made *spareTab
	if tb.inSession {
		if tb.sc, made = r.takeSession(b, o.session); tb.sc != nil {
			r.mark("session tab taken")
		}
	}
	if tb.sc == nil && !ownProxy {
		made = r.takeSpare(b) // a context with its own listener cannot be made ahead
	}
	var id cdp.BrowserContextID
	if made != nil {
		tb.w, tb.ctx, tb.closeTab, tb.frames, tb.made = made.w, made.ctx, made.close, made.frames, true
		tb.w.resetQuiet()
		id = made.id
		r.mark("spare taken")
	} else {
		var err error
		if id, err = tb.newContext(o, ownProxy); err != nil {
			return nil, err
		}
		if err := tb.newTab(id); err != nil {
			tb.releaseContext(id)
			return nil, err
		}
	}
	if !tb.inSession {
		tb.dispose = sync.OnceFunc(func() { r.disposeBrowserContext(b, id) })
	} else if tb.sc == nil {
		tb.sc = &sessionContext{key: o.session, b: b, id: id}
	}
	if tb.sc != nil {
		r.prepareNext(tb.sc) // in this render's renderer process
	}
	r.tabOpened()
	return tb, nil
}

// newContext creates the render's own browser context: cookies, storage,
// service workers and the HTTP cache of earlier renders are not there, and
// disposing of the context at the end drops what this render left. It is
// created and disposed of here, not by chromedp, under the browser's
// context rather than the render deadline: a create whose answer a
// cancellation loses, or a dispose that chromedp's short close timeout
// cuts, leaves a context behind.
func (tb *renderTab) newContext(o tabOptions, ownProxy bool) (cdp.BrowserContextID, error) {
	var proxyAddr string
	if ownProxy {
		sess, err := tb.r.openAuthSession(o.url, o.auth)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrNavigation, err)
		}
		tb.closeAuth = func() { tb.r.proxy.Load().CloseSession(sess) }
		proxyAddr = sess.Addr()
	}
	id, err := createBrowserContext(tb.b, proxyAddr)
	if err != nil {
		if tb.closeAuth != nil {
			tb.closeAuth()
		}
		if tb.b.dead() {
			return "", fmt.Errorf("%w: creating a browser context: %v", ErrBrowserCrashed, err)
		}
		return "", fmt.Errorf("%w: creating a browser context: %v", ErrNavigation, err)
	}
	tb.r.mark("context created")
	return id, nil
}

// newTab makes the chromedp context of a new tab in the browser context id,
// with the render's page watch.
func (tb *renderTab) newTab(id cdp.BrowserContextID) error {
	var observe func(string)
	if wo, ok := tb.r.cfg.Observer.(WarningObserver); ok {
		observe = wo.RenderWarning
	}
	tb.w = newPageWatch(tb.r.log, observe)
	var err error
	tb.ctx, tb.closeTab, tb.frames, err = tabContext(tb.b, id, chromedp.WithListener(tb.w.onEvent), chromedp.WithNewWindow(false))
	if err != nil {
		if tb.b.dead() {
			return fmt.Errorf("%w: %v", ErrBrowserCrashed, err)
		}
		return fmt.Errorf("%w: %v", ErrNavigation, err)
	}
	return nil
}

// releaseContext disposes of a context whose tab could not be made, and
// closes its proxy listener.
func (tb *renderTab) releaseContext(id cdp.BrowserContextID) {
	tb.r.disposeBrowserContext(tb.b, id)
	if tb.closeAuth != nil {
		tb.closeAuth()
	}
}

// target is the tab's target, once attached.
func (tb *renderTab) target() *chromedp.Target { return chromedp.FromContext(tb.ctx).Target }

// attach attaches a tab not made ahead and prepares it (prepareTab).
func (tb *renderTab) attach(runCtx context.Context) error {
	if tb.made {
		return nil
	}
	err := attachTab(runCtx, tb.ctx)
	tb.r.mark("tab attached")
	if err != nil {
		if runCtx.Err() == nil {
			return fmt.Errorf("%w: opening a tab: %v", ErrBrowserCrashed, err)
		}
		return err
	}
	err = tb.r.prepareTab(runCtx, tb.target())
	tb.r.mark("lean")
	return err
}

// closePage closes the render's page while its guard still answers
// (runPage). Disposing of the render's own context closes its tab with it,
// in one call. A session's context stays: only its tab closes, and, when
// the page printed (only a printed page's context is kept), the storage
// keys of its frames are read first. A page that failed or was canceled
// may still be loading, and Chromium answers Page.getFrameTree only once
// its navigation commits: asking would hold the cancel for as long.
func (tb *renderTab) closePage(printed bool) {
	if tb.dispose != nil {
		tb.dispose()
		return
	}
	if printed {
		tb.frameKeys = frameStorageKeys(tb.b, tb.target())
	}
	closeTarget(tb.b, tb.target().TargetID)
}

// release gives the tab back once the render is over: it closes the tab,
// then its session keeps the context (kept: the render succeeded) or it is
// disposed of, and the context's own proxy listener closes last.
func (tb *renderTab) release(kept bool) {
	tb.closeTab()
	tb.r.tabs.Add(-1)
	if tb.sc != nil {
		if kept {
			origins, overflow := tb.w.documentOrigins()
			tb.r.keepSession(tb.sc, origins, tb.frameKeys, overflow)
		} else {
			tb.r.discardSessionContext(tb.sc)
		}
	}
	if tb.dispose != nil {
		tb.dispose()
	}
	if tb.closeAuth != nil {
		tb.closeAuth()
	}
}

// openAuthSession opens the egress proxy listener of a render whose source
// has per-export credentials.
func (r *Renderer) openAuthSession(raw string, auth spec.Credentials) (*egress.Session, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("source URL: %w", err)
	}
	port := u.Port()
	if port == "" {
		port = spec.DefaultPort(u.Scheme)
	}
	host, _, _ := allowlist.CanonicalHost(u.Hostname())
	return r.proxy.Load().OpenSession(strings.ToLower(u.Scheme), host, port, auth)
}

// contextOpTimeout bounds creating and disposing of a browser context.
const contextOpTimeout = 10 * time.Second

// createBrowserContext creates a browser context; proxyAddr, if not empty, is
// its own listener of the egress proxy (a render with per-export credentials).
func createBrowserContext(b *browser, proxyAddr string) (cdp.BrowserContextID, error) {
	ctx, cancel := context.WithTimeout(b.ctx, contextOpTimeout)
	defer cancel()
	params := target.CreateBrowserContextParams{}
	if proxyAddr != "" {
		params.ProxyServer = "http://" + proxyAddr
		params.ProxyBypassList = "<-loopback>"
	}
	res, err := cdp.Call(ctx, b.session(), target.CreateBrowserContext, params)
	if err != nil {
		return "", err
	}
	return res.BrowserContextID, nil
}

func (r *Renderer) disposeBrowserContext(b *browser, id cdp.BrowserContextID) {
	if b.ctx.Err() != nil {
		return // the browser is gone, and its contexts with it
	}
	ctx, cancel := context.WithTimeout(b.ctx, contextOpTimeout)
	defer cancel()
	if _, err := cdp.Call(ctx, b.session(), target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: id}); err != nil && !b.dead() {
		r.log.Warn("disposing of a browser context failed", "id", id, "err", err)
	}
}

// tabOpenTimeout bounds waiting for a tab that is being opened when the
// render ends, so that it can be closed.
const tabOpenTimeout = 10 * time.Second

// attachTab creates and attaches the tab of tabCtx. It runs under tabCtx,
// not the render deadline: a Target.createTarget or attachToTarget whose
// answer is lost to a cancellation leaves a tab that nobody closes. When
// runCtx ends first it still waits, at most tabOpenTimeout, for the tab, so
// that the caller's deferred close finds and closes it.
func attachTab(runCtx, tabCtx context.Context) error {
	opened := make(chan error, 1)
	go func() { opened <- chromedp.Do(tabCtx) }()
	select {
	case err := <-opened:
		return err
	case <-runCtx.Done():
	}
	t := time.NewTimer(tabOpenTimeout)
	defer t.Stop()
	select {
	case <-opened:
	case <-t.C: // the caller's closeTab cancels tabCtx, which ends Do
	}
	return runCtx.Err()
}

// leanTab turns off what chromedp enables on every tab that a render does
// not use: the DOM and CSS agents (they track every node and style sheet of
// the document as it loads), console log forwarding, and target discovery
// and auto-attach (each tab would hear of every other tab, frame and worker).
// The page keeps Page (lifecycle, dialogs), Runtime, Network (network idle),
// Inspector (crashes) and the guard's Fetch.
func leanTab(ctx context.Context, t *chromedp.Target) error {
	steps := []struct {
		method string
		params any
	}{
		{"CSS.disable", nil},
		{"DOM.disable", nil},
		{"Log.disable", nil},
		{target.CommandSetAutoAttach, target.SetAutoAttachParams{AutoAttach: false, WaitForDebuggerOnStart: false}},
		{target.CommandSetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: false}},
	}
	for _, s := range steps {
		if err := t.Call(ctx, s.method, s.params, nil); err != nil {
			return fmt.Errorf("%w: preparing the tab (%s): %v", ErrNavigation, s.method, err)
		}
	}
	return nil
}

// prepareTab readies a tab opened for a render: leaner (leanTab), deaf to
// input, and with the idle probe (idle.go).
func (r *Renderer) prepareTab(ctx context.Context, t *chromedp.Target) error {
	if err := leanTab(ctx, t); err != nil {
		return err
	}
	// No input reaches the page: the browser moves a mouse onto a new
	// tab's page at its first frame, whose hit test is renderer work no
	// print needs, and whose hover a print would show.
	if _, err := cdp.Call(ctx, t, input.SetIgnoreInputEvents, input.SetIgnoreInputEventsParams{Ignore: true}); err != nil {
		return fmt.Errorf("%w: preparing the tab (ignoring input): %v", ErrNavigation, err)
	}
	return installIdleProbe(ctx, t)
}

func (r *Renderer) tabOpened() {
	n := r.tabs.Add(1)
	for {
		m := r.maxTabs.Load()
		if n <= m || r.maxTabs.CompareAndSwap(m, n) {
			return
		}
	}
}

// closeTarget closes a tab through the browser session and waits (bounded)
// until Chromium no longer lists it. Requests still paused by the guard are
// then canceled with the page, never resumed.
func closeTarget(b *browser, id target.ID) {
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	if _, err := cdp.Call(ctx, b.session(), target.CloseTarget, target.CloseTargetParams{TargetID: id}); err != nil {
		return
	}
	for {
		res, err := cdp.Call(ctx, b.session(), target.GetTargets, target.GetTargetsParams{})
		if err != nil || !slices.ContainsFunc(res.TargetInfos, func(i *target.Info) bool { return i.TargetID == id }) {
			return
		}
		if sleep(ctx, 10*time.Millisecond) != nil {
			return
		}
	}
}
