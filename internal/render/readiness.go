package render

// Readiness: loading a URL or HTML, network idle, web fonts, wait_for, and
// the page watch that follows the tab's events.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/pdfexport/pdfexport/internal/render/egress"
)

// Readiness bounds. The render deadline bounds them too.
const (
	networkQuiet   = 300 * time.Millisecond // no request started for this long, in the page's virtual time = network idle
	networkIdleMax = 10 * time.Second       // give up waiting for network idle (long polling) and print
	fontsMax       = 10 * time.Second       // give up waiting for document.fonts.ready and print
	pollInterval   = 50 * time.Millisecond  // readyState and WaitFor polling
)

// loadURL navigates the tab and waits for the load event of that
// navigation. With virtualClock the page loads on its virtual clock
// (runClock): a session's tab, whose renderer process keeps the clock of
// earlier renders stopped (session.go).
func loadURL(ctx context.Context, t *chromedp.Target, w *pageWatch, u string, virtualClock bool) error {
	if virtualClock {
		defer runClock(ctx, t)()
	}
	res, err := cdp.Call(ctx, t, page.Navigate, page.NavigateParams{URL: u})
	if err != nil {
		return fmt.Errorf("%w: navigating to %s: %v", ErrNavigation, shortURL(u), err)
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
		return fmt.Errorf("%w: %s: %s", ErrNavigation, shortURL(u), res.ErrorText)
	}
	if res.IsDownload {
		return permanent{fmt.Errorf("%w: %s is a download, not a page", ErrNavigation, shortURL(u))}
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
func loadHTML(ctx context.Context, t *chromedp.Target, w *pageWatch, frame cdp.FrameID, html string, virtualClock bool) error {
	if virtualClock {
		defer runClock(ctx, t)()
	}
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
	return inspect(ctx, t, staticExpr)
}

// inspect evaluates expr in the page: true only if it returned true.
func inspect(ctx context.Context, t *chromedp.Target, expr string) (bool, error) {
	res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: new(true)})
	if err != nil {
		return false, fmt.Errorf("%w: inspecting the document: %v", ErrNavigation, err)
	}
	return res.ExceptionDetails == nil && res.Result != nil && string(res.Result.Value) == "true", nil
}

// framelessExpr is true for a static document that a frame cannot change:
// no lazy image (a frame's intersection check starts its load) and no
// running animation or transition (a frame advances it).
const framelessExpr = `!document.querySelector("[loading=lazy i]") && document.getAnimations().length === 0`

// isFrameless reports whether a static document needs no frame before it
// is printed (framelessExpr); a tab under BeginFrame control then gets
// none at all.
func isFrameless(ctx context.Context, t *chromedp.Target) (bool, error) {
	return inspect(ctx, t, framelessExpr)
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
// missed, if not nil, is called after each evaluation that is not truthy
// (first: the first one); an error it returns ends the wait. With
// virtualClock the page's timers run on its virtual clock between polls,
// at most as fast as the real one (a session's tab, session.go).
func waitFor(ctx context.Context, t *chromedp.Target, expr string, stage *string, missed func(first bool) error, virtualClock bool) error {
	base := *stage
	for first := true; ; first = false {
		res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{
			// A promise or thenable is awaited for its value.
			Expression: "Promise.resolve(" + expr + "\n).then(v => !!v)", ReturnByValue: new(true), AwaitPromise: new(true),
		})
		if err != nil {
			return fmt.Errorf("%w: evaluating wait_for: %v", ErrNavigation, err)
		}
		if res.ExceptionDetails != nil {
			*stage = base + " (last exception: " + exceptionText(res.ExceptionDetails) + ")"
		} else if res.Result != nil && string(res.Result.Value) == "true" {
			return nil
		}
		if missed != nil {
			if err := missed(first); err != nil {
				return err
			}
		}
		if virtualClock {
			if err := pacedClock(ctx, t, pollInterval); err != nil {
				return err
			}
		} else if err := sleep(ctx, pollInterval); err != nil {
			return err
		}
	}
}

// pacedClock lets the page's virtual clock run for d and waits at least d
// of real time: a page polled for wait_for runs its timers at the pace it
// would on screen, where runClock's pace, as fast as the page goes, would
// spin a page that animates until it is ready.
func pacedClock(ctx context.Context, t *chromedp.Target, d time.Duration) error {
	start := time.Now()
	if err := grantVirtualTime(ctx, t, d); err != nil {
		return err
	}
	return sleep(ctx, d-time.Since(start))
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
	guard    *guard
	log      *slog.Logger
	warnings *warnings
	failures *pageFailures // what the page options judge (pagefail.go)
	// mainStatusFails says which statuses of the main document fail the
	// render (nil: 400 and more); loadPage sets it.
	mainStatusFails func(code int) bool

	mu         sync.Mutex
	frame      cdp.FrameID
	inflight   map[network.RequestID]string // URL
	requests   int                          // requests seen (redirects not counted)
	settled    int                          // of those, finished or failed
	quietSince time.Time
	loaded     map[cdp.LoaderID]bool
	responses  map[cdp.LoaderID]*network.Response // main-frame documents
	navLoaders map[cdp.LoaderID]bool              // loaders of main-frame document requests
	mainDocs   map[network.RequestID]bool         // main-frame document requests (their failures fail the render)
	crashed    bool
	// origins are those of the documents the page loaded (any frame),
	// whose storage a session resets (session.go); tooManyOrigins is set
	// past sessionMaxOrigins.
	origins        map[string]bool
	tooManyOrigins bool

	poke    chan struct{}
	dialogs chan page.DialogType // JavaScript dialogs waiting to be dismissed
}

func newPageWatch(log *slog.Logger, observeWarning func(kind string)) *pageWatch {
	return &pageWatch{
		log:        log,
		warnings:   newWarnings(observeWarning),
		failures:   &pageFailures{},
		inflight:   make(map[network.RequestID]string),
		quietSince: time.Now(),
		loaded:     make(map[cdp.LoaderID]bool),
		responses:  make(map[cdp.LoaderID]*network.Response),
		navLoaders: make(map[cdp.LoaderID]bool),
		mainDocs:   make(map[network.RequestID]bool),
		origins:    make(map[string]bool),
		poke:       make(chan struct{}, 1),
		dialogs:    make(chan page.DialogType, 8),
	}
}

// resetQuiet starts the quiet period now: a watch made ahead (a spare tab)
// has not been quiet for a render since it was made.
func (w *pageWatch) resetQuiet() {
	w.mu.Lock()
	w.quietSince = time.Now()
	w.mu.Unlock()
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
		// A request without a loader (a worker's script: no later event
		// of it reaches this session) finishes in another target.
		if _, ok := w.inflight[ev.RequestID]; !ok && ev.LoaderID != "" { // a redirect keeps its id
			url := ""
			if ev.Request != nil {
				url = ev.Request.URL
			}
			w.inflight[ev.RequestID] = url
			w.requests++
			w.quietSince = time.Now()
		}
		if ev.Type == network.ResourceTypeDocument && ev.Request != nil {
			w.addOrigin(ev.Request.URL)
		}
		if ev.Type == network.ResourceTypeDocument && ev.FrameID == w.frame && ev.LoaderID != "" {
			w.navLoaders[ev.LoaderID] = true
			w.mainDocs[ev.RequestID] = true
		}
	case *network.EventLoadingFinished:
		w.done(ev.RequestID)
	case *network.EventLoadingFailed:
		w.warnings.onLoadingFailed(ev, w.inflight[ev.RequestID], w.mainDocs[ev.RequestID])
		w.failures.onLoadingFailed(ev, w.inflight[ev.RequestID], w.mainDocs[ev.RequestID])
		w.done(ev.RequestID)
	case *network.EventResponseReceived:
		mainDoc := ev.Type == network.ResourceTypeDocument && ev.FrameID == w.frame
		w.warnings.onResponse(ev, mainDoc)
		w.failures.onResponse(ev, mainDoc)
		if mainDoc && ev.Response != nil {
			w.responses[ev.LoaderID] = ev.Response
		}
		if ev.Type == network.ResourceTypeDocument && ev.FrameID != w.frame {
			// A cross-site frame's document finishes loading in the frame's
			// own process (this session never gets its
			// loadingFinished); the load event waits for the frame.
			w.done(ev.RequestID)
		}
	case *page.EventLifecycleEvent:
		if ev.Name == "load" && ev.FrameID == w.frame {
			w.loaded[ev.LoaderID] = true
		}
	case *runtime.EventExceptionThrown:
		w.warnings.onException(ev)
		w.failures.onException(ev)
	case *runtime.EventConsoleAPICalled:
		w.warnings.onConsole(ev)
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

// addOrigin records the origin of a document the page loads; w.mu is held.
func (w *pageWatch) addOrigin(raw string) {
	o := originOf(raw)
	if o == "" || w.origins[o] {
		return
	}
	if len(w.origins) >= sessionMaxOrigins {
		w.tooManyOrigins = true
		return
	}
	w.origins[o] = true
}

// documentOrigins are the origins of the documents the page loaded, and
// whether there were more than sessionMaxOrigins.
func (w *pageWatch) documentOrigins() ([]string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.origins))
	for o := range w.origins {
		out = append(out, o)
	}
	return out, w.tooManyOrigins
}

// requestCount is how many requests the page has made so far.
func (w *pageWatch) requestCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.requests
}

// inflightCount is the number of the page's requests in flight.
func (w *pageWatch) inflightCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inflight)
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
		w.settled++
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
			urls = append(urls, shortURL(u))
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
		return fmt.Errorf("%w: the egress proxy refused %s", ErrBlocked, shortURL(resp.URL))
	case "upstream-failed":
		return fmt.Errorf("%w: %s: connecting failed", ErrNavigation, shortURL(resp.URL))
	}
	fails := w.mainStatusFails
	if fails == nil {
		fails = func(code int) bool { return code >= 400 }
	}
	if fails(int(resp.Status)) {
		return &StatusError{Code: int(resp.Status), Text: resp.StatusText, URL: shortURL(resp.URL)}
	}
	return nil
}

// egressHeader returns the value of egress.RefusedHeader in h, which only
// answers of the egress proxy carry (a server could send it too, but could
// only turn its own error into another non-success).
func egressHeader(h network.Headers) string {
	for k, v := range h {
		if strings.EqualFold(k, egress.RefusedHeader) {
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

// waitQuiet waits until no request is in flight and, when quiet is not 0,
// the page went quiet long enough in its virtual time (waitQuietVirtual).
// frame, if not nil, gives the page a frame (a tab under BeginFrame
// control, frames.go). With probe (a tab whose documents run the idle
// probe, idle.go) the period ends as soon as the page is idle; endedIdle
// says it did.
func waitQuiet(ctx context.Context, t *chromedp.Target, w *pageWatch, quiet time.Duration, frame func() error, probe bool) (endedIdle bool, err error) {
	if quiet <= 0 {
		return false, w.waitNetworkIdle(ctx, 0)
	}
	return waitQuietVirtual(ctx, t, w, quiet, frame, probe)
}

// waitQuietVirtual is the network quiet period in the page's virtual time:
// Chromium runs the page's timers as fast as it can while no request is in
// flight and stops its clock while one is (pauseIfNetworkFetchesPending),
// so a page whose timers start no request is done in milliseconds instead
// of quiet, and a timer that starts one still does before the budget ends.
// A budget in which requests started is followed by another, until one
// passes with none, as the real quiet period restarts on every request.
//
// A page's animation frames do not follow its virtual clock: on screen, a
// page that works in requestAnimationFrame gets a frame every frameInterval
// of the quiet period, but a budget that passes at once in real time
// leaves room for none. With frame (a tab whose frames the render gives),
// the budget is granted one frame interval at a time, each followed by a
// frame, so the page gets the frames of its quiet period as well
// (TestRender_PagesGetAnimationFrames); without (Chromium's own frames,
// the full browser), the budget is followed by two of Chromium's frames
// (awaitChromiumFrames). With probe as well, the page is
// checked after each interval's budget, before its frame, and the period
// ends once the page is idle (idle.go).
func waitQuietVirtual(ctx context.Context, t *chromedp.Target, w *pageWatch, quiet time.Duration, frame func() error, probe bool) (endedIdle bool, err error) {
	ictx, cancel := context.WithTimeout(ctx, networkIdleMax)
	defer cancel()
	defer func() {
		// The page's clock stays stopped for the fonts wait and the print,
		// as Chromium's own --virtual-time-budget prints: once enabled,
		// virtual time cannot go back to the real clock, and the other
		// policies skip ahead to every later timer (a page would run an
		// hour of its intervals in a moment).
		_, _ = cdp.Call(ctx, t, emulation.SetVirtualTimePolicy, emulation.SetVirtualTimePolicyParams{Policy: emulation.VirtualTimePolicyPause})
	}()
	// A page that never goes quiet (long polling) is printed anyway after
	// networkIdleMax, as waitNetworkIdle does.
	gaveUp := func(err error) error {
		if ctx.Err() == nil && ictx.Err() != nil {
			return nil
		}
		return err
	}
	var idle idleSince
	for {
		if err := w.waitNetworkIdle(ictx, 0); err != nil || ictx.Err() != nil {
			return false, gaveUp(err)
		}
		before := w.requestCount()
		step := quiet
		if frame != nil {
			step = frameInterval
		}
		for granted := time.Duration(0); granted < quiet; granted += step {
			// gaveUp passes on every error but the end of networkIdleMax.
			if err := grantVirtualTime(ictx, t, min(step, quiet-granted)); err != nil {
				return false, gaveUp(err)
			}
			if probe && frame != nil {
				done, err := idle.idle(ictx, t, w)
				if err != nil {
					return false, gaveUp(err)
				}
				if done {
					return true, w.checkCrashed()
				}
			}
			if frame != nil {
				if err := frame(); err != nil {
					return false, err
				}
			} else if err := awaitChromiumFrames(ictx, t); err != nil {
				return false, gaveUp(err)
			}
		}
		if err := w.checkCrashed(); err != nil {
			return false, err
		}
		w.mu.Lock()
		quietNow := w.requests == before && len(w.inflight) == 0
		w.mu.Unlock()
		if quietNow {
			return false, nil
		}
	}
}

// chromiumFramesWait bounds awaitChromiumFrames: a page that is not
// drawn (a hidden tab) gets no animation frame.
const chromiumFramesWait = 100 * time.Millisecond

// awaitChromiumFrames waits, at most chromiumFramesWait, until the page
// has had two animation frames of Chromium's own: with them a virtual quiet
// period that passed in a moment of real time still gives a page the
// frames that work chained to its load (a requestAnimationFrame inside
// another) get on screen. A tab whose frames the render gives gets them
// from the render instead.
func awaitChromiumFrames(ctx context.Context, t *chromedp.Target) error {
	fctx, cancel := context.WithTimeout(ctx, chromiumFramesWait)
	defer cancel()
	_, err := cdp.Call(fctx, t, runtime.Evaluate, runtime.EvaluateParams{
		Expression:   `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`,
		AwaitPromise: new(true), ReturnByValue: new(true),
	})
	if err != nil {
		// No frame came in time, or the document went (a page that
		// navigates itself): the page prints as it is then, and a
		// crashed one fails on the crash check after.
		return ctx.Err()
	}
	return nil
}

// loadClockStep is the virtual time runClock grants at a time.
const loadClockStep = 100 * time.Millisecond

// runClock keeps the page's virtual clock running while it loads, as
// Chromium's --virtual-time-budget does: the clock advances only while no
// request is in flight, loadClockStep at a time, until the returned stop
// is called. Virtual time is its renderer process's: once a render of a
// process stopped it, a later tab of the process loads nothing until it
// runs again.
func runClock(ctx context.Context, t *chromedp.Target) (stop func()) {
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for cctx.Err() == nil {
			if err := grantVirtualTime(cctx, t, loadClockStep); err != nil {
				return // the render fails or ends on its own context
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// grantVirtualTime lets the page's virtual clock run for budget
// (pausing while requests are in flight) and waits until it has.
func grantVirtualTime(ctx context.Context, t *chromedp.Target, budget time.Duration) error {
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	expired := cdp.Events(ectx, t, emulation.VirtualTimeBudgetExpired) // subscribed before the budget starts
	if _, err := cdp.Call(ctx, t, emulation.SetVirtualTimePolicy, emulation.SetVirtualTimePolicyParams{
		Policy: emulation.VirtualTimePolicyPauseIfNetworkFetchesPending, Budget: new(float64(budget) / float64(time.Millisecond)),
	}); err != nil {
		// The subscription ends only when its iterator runs: under the
		// canceled ectx it returns at once, and so does not outlive the
		// call.
		cancel()
		for range expired {
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: starting the page's virtual clock: %v", ErrNavigation, err)
	}
	for _, err := range expired {
		return err
	}
	return ctx.Err()
}
