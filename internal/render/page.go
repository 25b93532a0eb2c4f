package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Source is what to render: exactly one of URL and HTML is set. HTML is
// loaded without a network round trip into an about:blank document, so its
// relative URLs do not resolve: use absolute URLs (on the allowlist) or data:.
type Source struct {
	URL  string
	HTML string
}

// Stats describe one render.
type Stats struct {
	Pages     int           // pages in the PDF
	Bytes     int64         // size of the PDF
	Duration  time.Duration // from getting a tab slot until the sink returned (includes a browser start)
	QueueWait time.Duration // waiting for a tab slot (Concurrency)
}

// Readiness bounds. The render deadline bounds them too.
const (
	networkQuiet   = 300 * time.Millisecond // no request in flight for this long = network idle
	networkIdleMax = 10 * time.Second       // give up waiting for network idle (long polling) and print
	fontsMax       = 10 * time.Second       // give up waiting for document.fonts.ready and print
	pollInterval   = 50 * time.Millisecond  // readyState and WaitFor polling
)

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
	w := newPageWatch(r.log)
	opts := []chromedp.ContextOption{chromedp.WithListener(w.onEvent), chromedp.WithNewWindow(false)}
	if r.design == designContextPerRender {
		// Its own browser context: cookies, storage, service workers and
		// the HTTP cache of earlier renders are not there, and disposing
		// of the context at the end drops what this render left. Created
		// and disposed here, not by chromedp, under the browser's context
		// rather than the render deadline: a create whose answer a
		// cancellation loses, or a dispose that chromedp's short close
		// timeout cuts, leaves a context behind (measured: one in 500
		// renders with forced timeouts on a loaded machine).
		id, err := createBrowserContext(b)
		if err != nil {
			if b.dead() {
				return fmt.Errorf("%w: creating a browser context: %v", ErrBrowserCrashed, err)
			}
			return fmt.Errorf("%w: creating a browser context: %v", ErrNavigation, err)
		}
		defer r.disposeBrowserContext(b, id) // runs after closeTab
		opts = append(opts, chromedp.WithExistingBrowserContext(id))
	}
	tabCtx, closeTab := chromedp.NewContext(b.ctx, opts...)
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
	defer context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })()
	defer context.AfterFunc(r.closing, func() { cancel(ErrClosed) })()

	stage := "opening a tab"
	began := time.Now()
	limit := deadline.Sub(began)
	err := openTab(runCtx, tabCtx)
	if err != nil && runCtx.Err() == nil {
		err = fmt.Errorf("%w: opening a tab: %v", ErrBrowserCrashed, err)
	}
	if err == nil && !r.keepChromedpDomains {
		err = leanTab(runCtx, chromedp.FromContext(tabCtx).Target)
	}
	if err == nil {
		stopDialogs := w.dismissDialogs(runCtx, chromedp.FromContext(tabCtx).Target, r.log)
		err = r.runPage(runCtx, b, w, src, settings, sink, st, &stage)
		stopDialogs()
	}
	if err == nil {
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

// contextOpTimeout bounds creating and disposing of a browser context.
const contextOpTimeout = 10 * time.Second

func createBrowserContext(b *browser) (cdp.BrowserContextID, error) {
	ctx, cancel := context.WithTimeout(b.ctx, contextOpTimeout)
	defer cancel()
	res, err := cdp.Call(ctx, b.session(), target.CreateBrowserContext, target.CreateBrowserContextParams{})
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
func (r *Renderer) runPage(ctx context.Context, b *browser, w *pageWatch, src Source, settings spec.PrintSettings, sink func(context.Context, io.Reader) error, st *Stats, stage *string) error {
	// openTab attached the tab; it lives as long as the tab context.
	t := chromedp.FromContext(ctx).Target
	mainFrame := cdp.FrameID(t.TargetID)
	w.setMainFrame(mainFrame)

	*stage = "enabling the request guard"
	g := newGuard(r.cfg.AllowedHosts, r.log, mainFrame, w.wake)
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
	defer closeTarget(b, t.TargetID)
	if r.skipTabGuard {
		close(g.done)
	} else if err := g.start(gctx, t); err != nil {
		return fmt.Errorf("%w: enabling request interception: %v", ErrNavigation, err)
	}
	w.guard = g

	*stage = "emulating media"
	if _, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: settings.Media}); err != nil {
		return fmt.Errorf("%w: emulating media %q: %v", ErrNavigation, settings.Media, err)
	}

	if src.URL != "" {
		*stage = "loading " + truncate(src.URL, 200)
		if err := loadURL(ctx, t, w, src.URL); err != nil {
			return err
		}
	} else {
		*stage = "loading the HTML"
		if err := loadHTML(ctx, t, w, mainFrame, src.HTML); err != nil {
			return err
		}
	}

	*stage = "waiting for network idle"
	quiet := networkQuiet
	if settings.WaitFor != "" {
		// The page says when it is ready: its expression replaces the
		// guess that a quiet network means nothing more will come.
		// Requests in flight are still waited for, before and after it.
		quiet = 0
	} else if static, err := isStatic(ctx, t); err != nil {
		return err
	} else if static {
		// Nothing on the page can start a request later but style and
		// layout, which the fonts wait below forces; waiting for quiet
		// would only add its length to the render.
		quiet = 0
	}
	if err := w.waitNetworkIdle(ctx, quiet); err != nil {
		return err
	}
	requested := w.requestCount()
	*stage = "waiting for web fonts"
	if err := waitFonts(ctx, t); err != nil {
		return err
	}
	if w.requestCount() != requested {
		// The layout found more to load (background images, fonts).
		*stage = "waiting for network idle after layout"
		if err := w.waitNetworkIdle(ctx, quiet); err != nil {
			return err
		}
	}
	if settings.WaitFor != "" {
		*stage = fmt.Sprintf("waiting for wait_for %q to become truthy", truncate(settings.WaitFor, 100))
		if err := waitFor(ctx, t, settings.WaitFor, stage); err != nil {
			return err
		}
		*stage = "waiting for requests in flight after wait_for"
		if err := w.waitNetworkIdle(ctx, 0); err != nil {
			return err
		}
	}
	if err := g.mainBlocked(); err != nil {
		return err
	}
	if err := w.checkCrashed(); err != nil {
		return err
	}

	*stage = "printing"
	return printPDF(ctx, t, settings, sink, st, stage)
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

// loadURL navigates the tab and waits for the load event of that navigation.
func loadURL(ctx context.Context, t *chromedp.Target, w *pageWatch, u string) error {
	res, err := cdp.Call(ctx, t, page.Navigate, page.NavigateParams{URL: u})
	if err != nil {
		return fmt.Errorf("%w: navigating to %s: %v", ErrNavigation, truncate(u, 200), err)
	}
	if err := w.guard.mainBlocked(); err != nil {
		return err
	}
	if err := w.statusErr(res.LoaderID); err != nil {
		return err
	}
	if res.ErrorText != "" {
		if strings.Contains(res.ErrorText, "ERR_BLOCKED_BY_CLIENT") {
			// Only the guard fails requests as BlockedByClient. It records
			// why right after Fetch.failRequest returns, and this reply can
			// overtake that: wait briefly for the reason.
			return w.guard.awaitMainBlocked(ctx, u)
		}
		return fmt.Errorf("%w: %s: %s", ErrNavigation, truncate(u, 200), res.ErrorText)
	}
	if res.IsDownload {
		return permanent{fmt.Errorf("%w: %s is a download, not a page", ErrNavigation, truncate(u, 200))}
	}
	if err := w.waitLoad(ctx, res.LoaderID); err != nil {
		return err
	}
	if err := w.guard.mainBlocked(); err != nil {
		return err
	}
	return w.statusErr(res.LoaderID)
}

// loadHTML replaces the document of the blank tab with html and waits until
// it and its subresources loaded (readyState "complete").
func loadHTML(ctx context.Context, t *chromedp.Target, w *pageWatch, frame cdp.FrameID, html string) error {
	if _, err := cdp.Call(ctx, t, page.SetDocumentContent, page.SetDocumentContentParams{FrameID: frame, HTML: html}); err != nil {
		return fmt.Errorf("%w: setting the document content: %v", ErrNavigation, err)
	}
	for {
		res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{
			Expression: `document.readyState`, ReturnByValue: new(true),
		})
		if err != nil {
			return fmt.Errorf("%w: reading document.readyState: %v", ErrNavigation, err)
		}
		if res.Result != nil && string(res.Result.Value) == `"complete"` {
			return nil
		}
		if err := w.checkCrashed(); err != nil {
			return err
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
}

// staticExpr is true for a document that runs no script and has no frame or
// plugin: no element <script> (SVG's included), no attribute on* (inline
// handlers), no iframe, frame, object or embed.
const staticExpr = `!document.querySelector("script, iframe, frame, object, embed") &&
	document.evaluate("count(//@*[starts-with(local-name(), 'on')])", document, null, XPathResult.NUMBER_TYPE, null).numberValue === 0`

// isStatic reports whether the loaded document is static (staticExpr). A
// page that is not may start a request at any time after its load event,
// which is what the network quiet period waits for.
func isStatic(ctx context.Context, t *chromedp.Target) (bool, error) {
	res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: staticExpr, ReturnByValue: new(true)})
	if err != nil {
		return false, fmt.Errorf("%w: inspecting the document: %v", ErrNavigation, err)
	}
	return res.ExceptionDetails == nil && res.Result != nil && string(res.Result.Value) == "true", nil
}

// waitFonts waits (at most fontsMax) for document.fonts.ready after forcing a
// layout, so that fonts that only the layout discovers are requested too.
func waitFonts(ctx context.Context, t *chromedp.Target) error {
	fctx, cancel := context.WithTimeout(ctx, fontsMax+time.Second)
	defer cancel()
	expr := fmt.Sprintf(`(async () => {
		if (document.body) void document.body.offsetHeight;
		await Promise.race([document.fonts.ready, new Promise(r => setTimeout(r, %d))]);
		return true;
	})()`, fontsMax.Milliseconds())
	_, err := cdp.Call(fctx, t, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, AwaitPromise: new(true), ReturnByValue: new(true),
	})
	if err != nil && ctx.Err() != nil {
		return err
	}
	return nil // fonts that never settle are not worth failing the render
}

// waitFor polls expr until it is truthy. An expression that throws counts as
// falsy; its last exception is added to *stage for the timeout error.
func waitFor(ctx context.Context, t *chromedp.Target, expr string, stage *string) error {
	base := *stage
	for {
		res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{
			Expression: "!!(" + expr + "\n)", ReturnByValue: new(true), AwaitPromise: new(true),
		})
		if err != nil {
			return fmt.Errorf("%w: evaluating wait_for: %v", ErrNavigation, err)
		}
		if res.ExceptionDetails != nil {
			*stage = base + " (last exception: " + exceptionText(res.ExceptionDetails) + ")"
		} else if res.Result != nil && string(res.Result.Value) == "true" {
			return nil
		}
		if err := sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		s, _, _ := strings.Cut(d.Exception.Description, "\n")
		return s
	}
	return d.Text
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pageWatch follows the events of one tab. onEvent runs on chromedp's reader
// goroutine: it only records and pokes.
type pageWatch struct {
	guard *guard
	log   *slog.Logger

	mu         sync.Mutex
	frame      cdp.FrameID
	inflight   map[network.RequestID]string // URL
	requests   int                          // requests seen (redirects not counted)
	quietSince time.Time
	loaded     map[cdp.LoaderID]bool
	responses  map[cdp.LoaderID]*network.Response // main-frame documents
	navLoaders map[cdp.LoaderID]bool              // loaders of main-frame document requests
	crashed    bool

	poke    chan struct{}
	dialogs chan page.DialogType // JavaScript dialogs waiting to be dismissed
}

func newPageWatch(log *slog.Logger) *pageWatch {
	return &pageWatch{
		log:        log,
		inflight:   make(map[network.RequestID]string),
		quietSince: time.Now(),
		loaded:     make(map[cdp.LoaderID]bool),
		responses:  make(map[cdp.LoaderID]*network.Response),
		navLoaders: make(map[cdp.LoaderID]bool),
		poke:       make(chan struct{}, 1),
		dialogs:    make(chan page.DialogType, 8),
	}
}

func (w *pageWatch) setMainFrame(f cdp.FrameID) {
	w.mu.Lock()
	w.frame = f
	w.mu.Unlock()
}

func (w *pageWatch) onEvent(ev any) {
	w.mu.Lock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		// A request without a loader (a worker's script, measured: no
		// later event reaches this session) finishes in another target.
		if _, ok := w.inflight[ev.RequestID]; !ok && ev.LoaderID != "" { // a redirect keeps its id
			url := ""
			if ev.Request != nil {
				url = ev.Request.URL
			}
			w.inflight[ev.RequestID] = url
			w.requests++
			w.quietSince = time.Now()
		}
		if ev.Type == network.ResourceTypeDocument && ev.FrameID == w.frame && ev.LoaderID != "" {
			w.navLoaders[ev.LoaderID] = true
		}
	case *network.EventLoadingFinished:
		w.done(ev.RequestID)
	case *network.EventLoadingFailed:
		w.done(ev.RequestID)
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument && ev.FrameID == w.frame && ev.Response != nil {
			w.responses[ev.LoaderID] = ev.Response
		}
		if ev.Type == network.ResourceTypeDocument && ev.FrameID != w.frame {
			// A cross-site frame's document finishes loading in the frame's
			// own process (measured: this session never gets its
			// loadingFinished); the load event waits for the frame.
			w.done(ev.RequestID)
		}
	case *page.EventLifecycleEvent:
		if ev.Name == "load" && ev.FrameID == w.frame {
			w.loaded[ev.LoaderID] = true
		}
	case *inspector.EventTargetCrashed:
		w.crashed = true
	case *page.EventJavascriptDialogOpening:
		// A listener must not run commands; dismissDialogs answers it.
		select {
		case w.dialogs <- ev.Type:
		default: // a burst beyond the buffer: the dialog after this one re-signals
		}
	default:
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.wake()
}

// requestCount is how many requests the page has made so far.
func (w *pageWatch) requestCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests
}

// wake makes a wait re-check its condition.
func (w *pageWatch) wake() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

func (w *pageWatch) done(id network.RequestID) {
	if _, ok := w.inflight[id]; ok {
		delete(w.inflight, id)
		w.quietSince = time.Now()
	}
}

// wait re-checks cond (under w.mu) on every event and at the interval it
// asks for, until it is true or ctx ends.
func (w *pageWatch) wait(ctx context.Context, cond func() (bool, time.Duration)) error {
	for {
		w.mu.Lock()
		ok, recheck := cond()
		crashed := w.crashed
		w.mu.Unlock()
		if ok {
			return nil
		}
		if crashed {
			return w.checkCrashed()
		}
		if recheck <= 0 {
			recheck = time.Second
		}
		t := time.NewTimer(recheck)
		select {
		case <-w.poke:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// waitLoad waits for the load event of the navigation of loader, or of a
// main-frame navigation that replaced it (a script or meta refresh redirect),
// and ends early when the guard blocked a main-frame navigation.
func (w *pageWatch) waitLoad(ctx context.Context, loader cdp.LoaderID) error {
	var blocked error
	err := w.wait(ctx, func() (bool, time.Duration) {
		if blocked = w.guard.mainBlocked(); blocked != nil {
			return true, 0
		}
		if w.loaded[loader] {
			return true, 0
		}
		for l := range w.navLoaders {
			if w.loaded[l] {
				return true, 0
			}
		}
		return false, 0
	})
	if err != nil {
		return err
	}
	return blocked
}

// waitNetworkIdle waits until no request was in flight for quiet, for at
// most networkIdleMax; a page that never goes quiet is printed anyway.
func (w *pageWatch) waitNetworkIdle(ctx context.Context, quiet time.Duration) error {
	ictx, cancel := context.WithTimeout(ctx, networkIdleMax)
	defer cancel()
	err := w.wait(ictx, func() (bool, time.Duration) {
		if len(w.inflight) > 0 {
			return false, 0
		}
		left := quiet - time.Since(w.quietSince)
		return left <= 0, left
	})
	if err != nil && ctx.Err() == nil && ictx.Err() != nil {
		w.mu.Lock()
		var urls []string
		for _, u := range w.inflight {
			urls = append(urls, truncate(u, 100))
		}
		w.mu.Unlock()
		w.log.Info("network never went idle; printing anyway", "after", networkIdleMax, "in_flight", urls)
		return nil
	}
	return err
}

func (w *pageWatch) statusErr(loader cdp.LoaderID) error {
	w.mu.Lock()
	resp := w.responses[loader]
	w.mu.Unlock()
	if resp == nil {
		return nil
	}
	switch egressHeader(resp.Headers) {
	case "refused": // the egress proxy, not the server, answered
		return fmt.Errorf("%w: the egress proxy refused %s", ErrBlocked, truncate(resp.URL, 200))
	case "upstream-failed":
		return fmt.Errorf("%w: %s: connecting failed", ErrNavigation, truncate(resp.URL, 200))
	}
	if resp.Status >= 400 {
		return &StatusError{Code: int(resp.Status), Text: resp.StatusText, URL: truncate(resp.URL, 200)}
	}
	return nil
}

// egressHeader returns the value of egressRefusedHeader in h, which only
// answers of the egress proxy carry (a server could send it too, but could
// only turn its own error into another non-success).
func egressHeader(h network.Headers) string {
	for k, v := range h {
		if strings.EqualFold(k, egressRefusedHeader) {
			s, _ := v.(string)
			return s
		}
	}
	return ""
}

func (w *pageWatch) checkCrashed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.crashed {
		return fmt.Errorf("%w: the page's renderer process crashed", ErrNavigation)
	}
	return nil
}
