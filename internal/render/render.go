package render

// One render: a tab slot, a browser context and tab of its own, the page
// flow (guard, media, load, readiness, print) and the mapping of failures
// to the sentinel errors.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/pdfexport/pdfexport/internal/allowlist"
	"github.com/pdfexport/pdfexport/internal/chromium"
	"github.com/pdfexport/pdfexport/internal/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Source is what to render: exactly one of URL and HTML is set. HTML is
// loaded without a network round trip into an about:blank document, so its
// relative URLs do not resolve: use absolute URLs (on the allowlist) or data:.
type Source struct {
	URL  string
	HTML string
	// Auth are per-export credentials: every request to the URL's exact
	// host and port gets them (added by the egress proxy, so requests of
	// frames and workers too), no other request does.
	Auth spec.Credentials
	// MarkAnchors marks, just before printing, every element with an id
	// (and every <a name>) with an empty 1×1 link to AnchorPrefix plus the
	// escaped id, whose annotation records where the element was printed:
	// a chapter of a manual, whose links from other chapters must land on
	// it (internal/assemble). The marks are positioned absolutely, so the
	// layout does not change. A page without a language is given
	// UndeterminedLang, which a tagged PDF then says, instead of
	// Chromium's own locale, which would pass for the page's.
	MarkAnchors bool
	// MarkHeadings marks every rendered heading (h1–h6, role=heading) the
	// same way, with a link to HeadingMarkPrefix plus its place in the
	// document, its level and its text (marks.go): a chapter of an
	// untagged manual, whose outline the assembly builds from the marks,
	// so that the chapter prints without Chromium's tagged structure
	// (which Chromium's own outline needs, and which costs about a sixth
	// of a long page's print). With MarkAnchors, a heading's mark also
	// carries the ids of the heading, of the elements in it and of the
	// elements that open with it, which then get no mark of their own.
	MarkHeadings bool
	// Session, when not empty, lets the renders that name it run one
	// after another in one browser context (session.go): each in a new
	// tab, with the context's cookies and its documents' storage cleared
	// between them, and its HTTP cache and renderer process kept. It is
	// for the renders of one caller's one document (a manual's chapters):
	// renders of different sessions, and renders without one, share
	// nothing. A source with Auth gets a context of its own regardless.
	Session string
}

// AnchorPrefix starts the URL of an anchor mark (MarkAnchors); it must be
// internal/assemble's.
const AnchorPrefix = "https://anchor.pdfexport.invalid/"

// HeadingMarkPrefix starts the URL of a heading mark (MarkHeadings):
// AnchorPrefix and an escaped NUL, which no element id holds (an HTML
// parser turns NUL into U+FFFD), so that an assembly reads it as no
// element's anchor and drops it with the anchor marks. It must be
// internal/assemble's.
const HeadingMarkPrefix = AnchorPrefix + "%00h/"

// UndeterminedLang is the language (BCP 47 "und") MarkAnchors gives a
// page without one.
const UndeterminedLang = "und"

// Stats describe one render.
type Stats struct {
	Pages     int           // pages in the PDF
	Bytes     int64         // size of the PDF
	Duration  time.Duration // from getting a tab slot until the sink returned (includes a browser start)
	QueueWait time.Duration // waiting for a tab slot (Concurrency)
	// Warnings are what the page could not load or reported as errors, at
	// most spec.MaxWarnings; WarningsOmitted counts the rest.
	Warnings        []spec.Warning
	WarningsOmitted int
}

// errRenderDeadline is the cause of a render context that hit its deadline.
var errRenderDeadline = errors.New("render deadline")

// Render loads src in a new tab, waits until it is ready, prints it with
// settings and streams the PDF to sink, which must read it to the end. The
// reader sink gets pulls the PDF from Chromium chunk by chunk (IO.read); it is
// never held in memory whole. Render returns after sink returns and the tab is
// closed. Errors wrap one of the sentinels in errors.go; see Retryable.
//
// The deadline of a render is Config.Timeout from the moment it gets a tab
// slot, or ctx's deadline if that is sooner; it also bounds sink, whose ctx
// argument carries it.
func (r *Renderer) Render(ctx context.Context, src Source, settings spec.PrintSettings, sink func(ctx context.Context, pdf io.Reader) error) (st Stats, err error) {
	ctx, span := startRender(ctx, src)
	defer func() { endRender(span, st, err) }()
	defer func() {
		result := "ok"
		switch {
		case errors.Is(err, ErrTimeout):
			result = "timeout"
		case err != nil:
			result = "error"
		}
		r.cfg.Observer.RenderDone(result, st.Duration)
		if so, ok := r.cfg.Observer.(StatsObserver); ok {
			so.RenderStats(result, st)
		}
	}()
	if sink == nil {
		return st, permanent{fmt.Errorf("%w: nil sink", ErrSink)}
	}
	if (src.URL == "") == (src.HTML == "") {
		return st, permanent{fmt.Errorf("%w: source needs exactly one of URL and HTML", ErrNavigation)}
	}
	if src.URL != "" {
		if err := checkURL(r.cfg.AllowedHosts, src.URL); err != nil {
			return st, err
		}
	}

	r.mu.Lock()
	if r.closing.Err() != nil {
		r.mu.Unlock()
		return st, ErrClosed
	}
	r.renders.Add(1)
	r.mu.Unlock()
	defer r.renders.Done()

	queued := time.Now()
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		st.QueueWait = time.Since(queued)
		return st, callerErr(ctx, "waiting for a free tab")
	case <-r.closing.Done():
		return st, ErrClosed
	}
	defer func() { <-r.sem }()
	began := time.Now()
	st.QueueWait = began.Sub(queued)
	defer func() { st.Duration = time.Since(began) }()

	r.mark("slot")
	b, release, aerr := r.acquire(ctx, true)
	if aerr != nil {
		if ctx.Err() != nil {
			return st, callerErr(ctx, "starting the browser")
		}
		return st, aerr
	}
	defer release()

	if src.URL != "" {
		// Fail fast, and as ErrBlocked, when the source's name resolves only
		// to addresses the allowlist does not name; the proxy checks again
		// when it dials.
		if err := r.precheckSource(ctx, src.URL); err != nil {
			return st, err
		}
	}

	err = r.renderInTab(ctx, b, src, settings, sink, &st)
	r.mark("done")
	if err != nil {
		r.log.Debug("render failed", "err", err, "queue_wait", st.QueueWait)
	}
	return st, err
}

// callerErr maps the end of the caller's context: its deadline is ErrTimeout,
// anything else is its cause.
func callerErr(ctx context.Context, stage string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: caller's deadline passed while %s", ErrTimeout, stage)
	}
	return fmt.Errorf("render canceled while %s: %w", stage, context.Cause(ctx))
}

// renderInTab runs one render in its own tab and maps its failure to a
// sentinel.
func (r *Renderer) renderInTab(ctx context.Context, b *browser, src Source, settings spec.PrintSettings, sink func(context.Context, io.Reader) error, st *Stats) error {
	var observe func(string)
	if wo, ok := r.cfg.Observer.(WarningObserver); ok {
		observe = wo.RenderWarning
	}
	ownProxy := !src.Auth.Empty() && src.URL != ""
	// A session's render runs in a context the session keeps (session.go);
	// a context with its own proxy listener is the render's alone.
	// Only the headless shell keeps every frame in the page's process,
	// where the reset between a session's renders finds their storage.
	inSession := src.Session != "" && !ownProxy && chromium.IsHeadlessShell(r.cfg.ChromiumPath)
	var sc *sessionContext
	var sp *spareTab
	if inSession {
		if sc, sp = r.takeSession(b, src.Session); sc != nil {
			r.mark("session tab taken")
		}
	}
	if sc == nil && !ownProxy {
		// A context with its own proxy listener cannot be made ahead.
		sp = r.takeSpare(b)
	}
	w := newPageWatch(r.log, observe)
	opts := []chromedp.ContextOption{chromedp.WithListener(w.onEvent), chromedp.WithNewWindow(false)}
	var tabCtx context.Context
	var closeTab context.CancelFunc
	// closePage closes the render's page while the guard still answers
	// (runPage): disposing of the render's own context closes its tab with
	// it, in one call; in the shared context the tab is closed alone. The
	// deferred dispose below is then a no-op.
	var dispose func()
	var frames bool // the tab is under BeginFrame control (frames.go)
	var contextID cdp.BrowserContextID
	if sp != nil {
		w, tabCtx, closeTab, frames = sp.w, sp.ctx, sp.close, sp.frames
		w.resetQuiet()
		contextID = sp.id
		if sc == nil && !inSession {
			dispose = sync.OnceFunc(func() { r.disposeBrowserContext(b, sp.id) })
			defer dispose() // runs after closeTab
		}
		r.mark("spare taken")
	} else {
		// Its own browser context: cookies, storage, service workers and
		// the HTTP cache of earlier renders are not there, and disposing
		// of the context at the end drops what this render left. Created
		// and disposed here, not by chromedp, under the browser's context
		// rather than the render deadline: a create whose answer a
		// cancellation loses, or a dispose that chromedp's short close
		// timeout cuts, leaves a context behind (seen in renders with
		// forced timeouts on a loaded machine).
		var proxyAddr string
		if ownProxy {
			sess, err := r.openAuthSession(src)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrNavigation, err)
			}
			defer r.proxy.Load().CloseSession(sess) // after the context is disposed of
			proxyAddr = sess.Addr()
		}
		id, err := createBrowserContext(b, proxyAddr)
		if err != nil {
			if b.dead() {
				return fmt.Errorf("%w: creating a browser context: %v", ErrBrowserCrashed, err)
			}
			return fmt.Errorf("%w: creating a browser context: %v", ErrNavigation, err)
		}
		contextID = id
		if !inSession {
			dispose = sync.OnceFunc(func() { r.disposeBrowserContext(b, id) })
			defer dispose() // runs after closeTab
		} else {
			// Until the session holds the context (below), a failure
			// disposes of it here.
			defer func() {
				if sc == nil {
					r.disposeBrowserContext(b, id)
				}
			}()
		}
		r.mark("context created")
	}
	if tabCtx == nil {
		var err error
		tabCtx, closeTab, frames, err = tabContext(b, contextID, opts...)
		if err != nil {
			if b.dead() {
				return fmt.Errorf("%w: %v", ErrBrowserCrashed, err)
			}
			return fmt.Errorf("%w: %v", ErrNavigation, err)
		}
	}
	var kept bool          // the render succeeded: its session keeps the context
	var frameKeys []string // storage keys of the page's frames as it closed
	if inSession {
		if sc == nil {
			sc = &sessionContext{key: src.Session, b: b, id: contextID}
		}
		r.prepareNext(sc) // in this render's renderer process
		defer func() {    // runs after closeTab
			if kept {
				origins, overflow := w.documentOrigins()
				r.keepSession(sc, origins, frameKeys, overflow)
			} else {
				r.discardSessionContext(sc)
			}
		}()
	}
	r.tabOpened()
	defer r.tabs.Add(-1) // runs after closeTab returned
	defer closeTab()

	// runCtx: the tab's context (ends when the browser dies) with the render
	// deadline, also canceled by the caller and by Close.
	deadline := time.Now().Add(r.cfg.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	cancelable, cancel := context.WithCancelCause(tabCtx)
	defer cancel(nil)
	runCtx, cancelDeadline := context.WithDeadlineCause(cancelable, deadline, errRenderDeadline)
	defer cancelDeadline()
	runCtx = withSpan(runCtx, ctx)
	stages := newStages(runCtx)
	defer context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })()
	defer context.AfterFunc(r.closing, func() { cancel(ErrClosed) })()

	stage := "opening a tab"
	began := time.Now()
	limit := deadline.Sub(began)
	stages.next("render.tab")
	var err error
	if sp == nil {
		err = openTab(runCtx, tabCtx)
		r.mark("tab attached")
	}
	if err != nil && runCtx.Err() == nil {
		err = fmt.Errorf("%w: opening a tab: %v", ErrBrowserCrashed, err)
	}
	if err == nil && sp == nil {
		err = r.prepareTab(runCtx, chromedp.FromContext(tabCtx).Target)
		r.mark("lean")
	}
	if err == nil {
		stopDialogs := w.dismissDialogs(runCtx, chromedp.FromContext(tabCtx).Target, r.log)
		closePage := func(bool) { closeTarget(b, chromedp.FromContext(tabCtx).Target.TargetID) }
		if inSession {
			closePage = func(printed bool) {
				// Only a printed page's context is kept, so only its
				// frames' storage keys are needed. A page that failed
				// or was canceled may still be loading, and Chromium
				// answers Page.getFrameTree only once its navigation
				// commits: asking would hold the cancel for as long.
				if printed {
					frameKeys = frameStorageKeys(b, chromedp.FromContext(tabCtx).Target)
				}
				closeTarget(b, chromedp.FromContext(tabCtx).Target.TargetID)
			}
		}
		if dispose != nil {
			closePage = func(bool) { dispose() }
		}
		var framesCtx context.Context // the tab's, when it needs pumpFrames
		if frames {
			framesCtx = tabCtx
		}
		err = r.runPage(runCtx, b, w, framesCtx, src, settings, sink, st, &stage, stages, closePage, inSession)
		stopDialogs()
	}
	stages.end(err)
	if err == nil {
		kept = true
		return nil
	}
	switch {
	case b.dead():
		return fmt.Errorf("%w while %s (pid %d): %v", ErrBrowserCrashed, stage, b.pid, err)
	case runCtx.Err() != nil:
		cause := context.Cause(runCtx)
		switch {
		case errors.Is(cause, errRenderDeadline), errors.Is(cause, context.DeadlineExceeded):
			return fmt.Errorf("%w after %v (limit %v) while %s", ErrTimeout, time.Since(began).Round(time.Millisecond), limit.Round(time.Millisecond), stage)
		case errors.Is(cause, ErrClosed):
			return fmt.Errorf("%w while %s", ErrClosed, stage)
		case ctx.Err() != nil:
			return callerErr(ctx, stage)
		}
		return fmt.Errorf("%w: tab closed while %s: %v", ErrBrowserCrashed, stage, err)
	}
	return err
}

// openAuthSession opens the egress proxy listener of a render whose source
// has per-export credentials.
func (r *Renderer) openAuthSession(src Source) (*egress.Session, error) {
	u, err := url.Parse(src.URL)
	if err != nil {
		return nil, fmt.Errorf("source URL: %w", err)
	}
	port := u.Port()
	if port == "" {
		port = spec.DefaultPort(u.Scheme)
	}
	host, _, _ := allowlist.CanonicalHost(u.Hostname())
	return r.proxy.Load().OpenSession(strings.ToLower(u.Scheme), host, port, src.Auth)
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

// openTab creates and attaches the tab (and browser context) of tabCtx. It
// runs under tabCtx, not the render deadline: a Target.createTarget or
// attachToTarget whose answer is lost to a cancellation leaves a tab that
// nobody closes (measured: orphan tabs after forced timeouts). When runCtx
// ends first it still waits, at most tabOpenTimeout, for the tab, so that the
// caller's deferred close finds and closes it.
func openTab(runCtx, tabCtx context.Context) error {
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
// Inspector (crashes) and the guard's Fetch. Measured in
// BenchmarkRenderDesign as the "lean" candidate.
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

// prepareTab readies a tab opened for a render: leaner (leanTab, unless
// a benchmark keeps chromedp's domains), deaf to input, and with the idle
// probe (idle.go).
func (r *Renderer) prepareTab(ctx context.Context, t *chromedp.Target) error {
	if err := leanTab(ctx, t); err != nil {
		return err
	}
	// No input reaches the page: the browser moves a mouse onto a new
	// tab's page at its first frame, whose hit test costs the renderer
	// about 12 ms on a Node.js API page, and whose hover a print would
	// show.
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

// runPage does the work of a render on the tab of ctx. It returns errors that
// already wrap their sentinel; renderInTab overrides them when the browser
// died or the context ended.
func (r *Renderer) runPage(ctx context.Context, b *browser, w *pageWatch, tabCtx context.Context, src Source, settings spec.PrintSettings, sink func(context.Context, io.Reader) error, st *Stats, stage *string, stages *stages, closePage func(printed bool), virtualClock bool) (err error) {
	// openTab attached the tab; it lives as long as the tab context.
	t := chromedp.FromContext(ctx).Target
	mainFrame := cdp.FrameID(t.TargetID)
	w.setMainFrame(mainFrame)

	*stage = "enabling the request guard"
	g := newGuard(r.cfg.AllowedHosts, r.log, mainFrame, w.wake, func(url, reason string) {
		w.warnings.add(spec.Warning{Kind: spec.WarningBlocked, URL: url, Message: reason})
	})
	gctx, stopGuard := context.WithCancel(ctx)
	defer func() {
		g.wait()
		if n := g.blockedCount.Load(); n > 0 {
			r.log.Info("guard blocked requests of the page", "count", n)
		}
	}()
	defer stopGuard()
	// Close the tab while the guard still answers: detaching first (as
	// chromedp's cancel does) would let Chromium resume paused requests.
	defer func() { closePage(err == nil); r.mark("tab closed") }()
	if r.hooks.skipTabGuard {
		close(g.done)
	} else if err := g.start(gctx, t); err != nil {
		return fmt.Errorf("%w: enabling request interception: %v", ErrNavigation, err)
	}
	w.guard = g
	r.mark("guard on")
	// frame gives the page one frame and learns what it started;
	// stepFrame only gives it (the virtual quiet period's steps, which
	// watch the requests over the whole period). nil: Chromium makes the
	// tab's frames, or the page needs none.
	var frame, stepFrame func() error
	if tabCtx != nil {
		// The readiness steps below give the page the frames it can
		// need, and no more (the package documentation says which).
		give := func() error { return framesFailed(r, b, w, beginFrame(tabCtx, b, t)) }
		stepFrame = give
		frame = func() error {
			if err := give(); err != nil {
				return err
			}
			// A round trip through the page's session after its frame:
			// the requests the frame started (a lazy image) are then
			// known, their events having come first on that session.
			if _, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: "0"}); err != nil {
				return fmt.Errorf("%w: after a frame: %v", ErrNavigation, err)
			}
			return nil
		}
	}

	*stage = "emulating media"
	if _, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: settings.Media}); err != nil {
		return fmt.Errorf("%w: emulating media %q: %v", ErrNavigation, settings.Media, err)
	}

	r.mark("media")
	stages.next("render.load")
	if src.URL != "" {
		*stage = "loading " + shortURL(src.URL)
		if err := loadURL(ctx, t, w, src.URL, virtualClock); err != nil {
			return err
		}
	} else {
		*stage = "loading the HTML"
		if err := loadHTML(ctx, t, w, mainFrame, src.HTML, virtualClock); err != nil {
			return err
		}
	}

	r.mark("loaded")
	*stage = "waiting for network idle"
	stages.next("render.network_idle")
	quiet := networkQuiet
	var waitForFrame func() error // frame, for the wait_for stage
	// still: no timer of the page runs before the print (a static page,
	// or one whose virtual clock the quiet period stopped); scripted: the
	// page runs script.
	var still, scripted bool
	if settings.WaitFor != "" {
		// The page says when it is ready: its expression replaces the
		// guess that a quiet network means nothing more will come.
		// Requests in flight are still waited for, before and after it.
		// Its frames wait for the wait_for stage: a page that is ready
		// when asked may need none.
		quiet = 0
		waitForFrame, frame, stepFrame = frame, nil, nil
	} else if static, err := isStatic(ctx, t); err != nil {
		return err
	} else if static {
		// Nothing on the page can start a request later but style and
		// layout, which the fonts wait below forces; waiting for quiet
		// would only add its length to the render.
		quiet = 0
		still = true
		if frame != nil {
			// Nor can a frame change a static page without lazy images
			// or animations: it gets none.
			if frameless, err := isFrameless(ctx, t); err != nil {
				return err
			} else if frameless {
				frame, stepFrame = nil, nil
			}
		}
	}
	r.mark("static check")
	if frame != nil {
		*stage = "making the first frame"
		if err := frame(); err != nil {
			return err
		}
	}
	// Only a navigated document runs the idle probe: one set by content
	// replaces the blank page's document without a new one.
	probe := src.URL != ""
	quietWait := func() error {
		endedIdle, err := waitQuiet(ctx, t, w, quiet, stepFrame, probe)
		if endedIdle {
			r.mark("quiet ended idle")
		}
		return err
	}
	if err := quietWait(); err != nil {
		return err
	}
	if quiet > 0 {
		still, scripted = true, true // the quiet period stopped the page's clock
	}
	r.mark("network idle")
	requested := w.requestCount()
	*stage = "waiting for web fonts"
	stages.next("render.fonts")
	if err := waitFonts(ctx, t); err != nil {
		return err
	}
	r.mark("fonts")
	if frame != nil {
		if err := frame(); err != nil {
			return err
		}
	}
	if w.requestCount() != requested {
		// The layout found more to load (background images, fonts).
		*stage = "waiting for network idle after layout"
		stages.next("render.network_idle")
		if err := quietWait(); err != nil {
			return err
		}
		r.mark("network idle after layout")
	}
	if settings.WaitFor != "" {
		*stage = fmt.Sprintf("waiting for wait_for %q to become truthy", truncate(settings.WaitFor, 100))
		stages.next("render.wait_for")
		var pump *framePump
		var missed func(bool) error
		if waitForFrame != nil {
			// A page not ready when first asked gets frames while it
			// is polled (a refused frame ends the wait); the pump is
			// stopped before the print, and on an early return (a
			// second stop is a no-op).
			missed = func(first bool) error {
				if first {
					pump = pumpFrames(tabCtx, b, t)
				}
				return framesFailed(r, b, w, pump.failed())
			}
			defer func() { _ = pump.stop() }()
		}
		if err := waitFor(ctx, t, settings.WaitFor, stage, missed, virtualClock); err != nil {
			return err
		}
		if waitForFrame != nil && pump == nil {
			// Ready at once: a frame only if one could change the print
			// (a lazy image of the first screen starts loading in it;
			// waited for below).
			if frameless, err := isFrameless(ctx, t); err != nil {
				return err
			} else if !frameless {
				if err := waitForFrame(); err != nil {
					return err
				}
			}
		}
		r.mark("wait_for")
		*stage = "waiting for requests in flight after wait_for"
		stages.next("render.network_idle")
		if err := w.waitNetworkIdle(ctx, 0); err != nil {
			return err
		}
		r.mark("network idle after wait_for")
		if err := framesFailed(r, b, w, pump.stop()); err != nil {
			return err
		}
	}
	if err := g.mainBlocked(); err != nil {
		return err
	}
	if err := w.checkCrashed(); err != nil {
		return err
	}
	st.Warnings, st.WarningsOmitted = w.warnings.result()
	if err := w.warnings.failure(settings.FailOn); err != nil {
		return err // before printing: nothing reaches the sink
	}

	if src.MarkAnchors || src.MarkHeadings {
		*stage = "marking anchors and headings"
		stages.next("render.anchor_marks")
		failed, err := addMarks(ctx, t, src.MarkAnchors, src.MarkHeadings)
		if err != nil {
			return err
		}
		if src.MarkAnchors && failed.Anchors != "" {
			r.log.Info("marking anchors failed; links from other chapters to the page's elements find no target", "err", failed.Anchors)
		}
		if src.MarkHeadings && failed.Headings != "" {
			// The page broke the script (it replaced what the script
			// calls): Chromium's tagged print gives the outline instead,
			// which the assembly takes before any mark.
			r.log.Info("marking headings failed; the page prints tagged with Chromium's outline", "err", failed.Headings)
			settings.Outline, settings.Tagged = true, true
		}
	}
	if still && tabCtx != nil && settings.Media == "print" {
		*stage = "preparing the print"
		if err := skipLayoutAfterPrint(ctx, t, w, scripted); err != nil {
			return err
		}
	}
	*stage = "printing"
	stages.next("render.print")
	r.mark("checks")
	streamed := func(_ context.Context, pdf io.Reader) error {
		r.mark("printed")
		// The stream stage, its span in the sink's context (ctx, the
		// render's; tracing off, ctx itself).
		return sink(stages.next("render.stream"), pdf)
	}
	err = printPDF(ctx, t, settings, limits{r.cfg.MaxPages, r.cfg.MaxBytes}, streamed, st, stage)
	r.mark("streamed")
	if err == nil && r.hooks.printed != nil {
		r.hooks.printed(ctx, t)
	}
	return err
}

// framesFailed maps the failure of a BeginFrame (nil: none) to the
// render's error. A page whose renderer crashed fails as such. Otherwise
// Chromium refused the frame: the page may have missed frames (a
// requestAnimationFrame that never ran), so it is not printed; the
// browser's next tabs get Chromium's own frames, the retry one of them.
func framesFailed(r *Renderer, b *browser, w *pageWatch, err error) error {
	if err == nil {
		return nil
	}
	if cerr := w.checkCrashed(); cerr != nil {
		return cerr
	}
	if errors.Is(err, errNoFrameControl) && b.frameControl.Swap(false) {
		r.log.Warn("Chromium refused a BeginFrame; the browser's next tabs get its own frames", "err", err)
	}
	return fmt.Errorf("%w: %v", ErrNavigation, err)
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
