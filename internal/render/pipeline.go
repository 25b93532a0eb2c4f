package render

// The stages of a render's page, each a function of the page and the
// options of its stage (renderJob): load the source, wait until it is
// ready, check it, measure it; print.go prints and streams it.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// tabPage is a render's attached tab as its stages pass it on.
type tabPage struct {
	r   *Renderer
	b   *browser
	tab *renderTab
	t   *chromedp.Target
	w   *pageWatch
	// tabCtx is the tab's own context, which frames run under; nil when
	// Chromium makes the tab's frames (no BeginFrame control).
	tabCtx context.Context
	// virtualClock: the page loads and polls on its virtual clock, since
	// its renderer process keeps the clock of earlier renders stopped (a
	// session's tab, session.go).
	virtualClock bool
	// probe: the document runs the idle probe (idle.go). Only a navigated
	// one does: content set into the blank page replaces its document
	// without a new one. loadPage sets it.
	probe    bool
	progress *progress
}

// newTabPage is the page of the attached tab tb.
func newTabPage(r *Renderer, tb *renderTab, p *progress) *tabPage {
	pg := &tabPage{r: r, b: tb.b, tab: tb, t: tb.target(), w: tb.w, virtualClock: tb.inSession, progress: p}
	if tb.frames {
		pg.tabCtx = tb.ctx
	}
	pg.w.setMainFrame(pg.mainFrame())
	return pg
}

// mainFrame is the page's main frame, whose id is the tab's.
func (pg *tabPage) mainFrame() cdp.FrameID { return cdp.FrameID(pg.t.TargetID) }

// guardPage makes the page's request guard (guard.go): start puts it on
// the tab, stop takes it off and waits until it answered its last request.
func guardPage(ctx context.Context, pg *tabPage, o loadOptions) (start func() error, stop func()) {
	w := pg.w
	g := newGuard(pg.r.cfg.AllowedHosts, pg.r.log, pg.mainFrame(), w.wake, func(url, reason string) {
		w.warnings.add(spec.Warning{Kind: spec.WarningBlocked, URL: url, Message: reason})
	})
	g.headers = o.headers
	w.guard = g
	gctx, cancel := context.WithCancel(ctx)
	start = func() error {
		if pg.r.hooks.skipTabGuard {
			close(g.done)
			return nil
		}
		if err := g.start(gctx, pg.t); err != nil {
			return fmt.Errorf("%w: enabling request interception: %v", ErrNavigation, err)
		}
		return nil
	}
	stop = func() {
		cancel()
		g.wait()
		if n := g.blockedCount.Load(); n > 0 {
			pg.r.log.Info("guard blocked requests of the page", "count", n)
		}
	}
	return start, stop
}

// loadPage emulates the media of the print and loads the source: a URL to
// its load event (loadURL), HTML until it and its subresources loaded
// (loadHTML).
func loadPage(ctx context.Context, pg *tabPage, o loadOptions) error {
	pg.progress.at("emulating media")
	pg.w.mainStatusFails = o.mainStatusFails
	if err := applyLoad(ctx, pg, o); err != nil {
		return err
	}
	if _, err := cdp.Call(ctx, pg.t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: o.media, Features: mediaFeatures(o.mediaFeatures)}); err != nil {
		return fmt.Errorf("%w: emulating media %q: %v", ErrNavigation, o.media, err)
	}
	if o.viewport != nil {
		if err := setViewport(ctx, pg, o.viewport); err != nil {
			return err
		}
	}
	pg.r.mark("media")
	var err error
	if o.url != "" {
		pg.progress.enter("render.load", "loading "+shortURL(o.url))
		err = loadURL(ctx, pg.t, pg.w, o.url, pg.virtualClock)
		pg.probe = true
	} else {
		pg.progress.enter("render.load", "loading the HTML")
		err = loadHTML(ctx, pg.t, pg.w, pg.mainFrame(), o.html, pg.virtualClock)
	}
	if err != nil {
		return err
	}
	pg.r.mark("loaded")
	return nil
}

// readiness is what waitReady learned of the page, for its print.
type readiness struct {
	// still: no timer of the page runs before the print (a static page,
	// or one whose virtual clock the quiet period stopped).
	still bool
	// scripted: the page runs script.
	scripted bool
}

// waitReady waits until the loaded page is ready to print: the network
// quiet (settle), then, with wait_for, the page's own word for it
// (awaitWaitFor). The package documentation says what each step waits
// for and which frames it gives.
func waitReady(ctx context.Context, pg *tabPage, o readyOptions) (readiness, error) {
	pg.progress.enter("render.network_idle", "waiting for network idle")
	plan, err := planSettle(ctx, pg, o.waitFor)
	if err != nil {
		return readiness{}, err
	}
	rd, err := settle(ctx, pg, plan)
	if err != nil || o.waitFor == "" {
		return rd, err
	}
	return rd, awaitWaitFor(ctx, pg, o.waitFor)
}

// settlePlan is how a page settles after its load (settle).
type settlePlan struct {
	quiet  time.Duration // the network quiet period; 0: requests in flight only
	frames bool          // the settling steps give the page frames
	still  bool          // a static page
}

// planSettle decides how the page settles. A page with wait_for says
// itself when it is ready: its expression replaces the guess that a quiet
// network means nothing more will come, and its frames wait for the
// wait_for stage (a page that is ready when asked may need none). On a
// static page nothing can start a request later but style and layout,
// which the fonts wait forces: waiting for quiet would only add its
// length; nor can a frame change one without lazy images or animations.
func planSettle(ctx context.Context, pg *tabPage, waitFor string) (settlePlan, error) {
	plan := settlePlan{quiet: networkQuiet, frames: pg.tabCtx != nil}
	if waitFor != "" {
		plan.quiet, plan.frames = 0, false
		pg.r.mark("static check")
		return plan, nil
	}
	static, err := isStatic(ctx, pg.t)
	if err != nil {
		return plan, err
	}
	if static {
		plan.quiet, plan.still = 0, true
		if plan.frames {
			frameless, err := isFrameless(ctx, pg.t)
			if err != nil {
				return plan, err
			}
			plan.frames = !frameless
		}
	}
	pg.r.mark("static check")
	return plan, nil
}

// settle waits, as plan says, for the network quiet, then forces a layout
// and waits for web fonts, and for what the layout found to load.
func settle(ctx context.Context, pg *tabPage, plan settlePlan) (readiness, error) {
	rd := readiness{still: plan.still}
	if plan.frames {
		pg.progress.at("making the first frame")
		if err := pg.frame(ctx); err != nil {
			return rd, err
		}
		pg.progress.at("waiting for network idle")
	}
	if err := quietWait(ctx, pg, plan); err != nil {
		return rd, err
	}
	if plan.quiet > 0 {
		rd.still, rd.scripted = true, true // the quiet period stopped the page's clock
	}
	pg.r.mark("network idle")
	requested := pg.w.requestCount()
	pg.progress.enter("render.fonts", "waiting for web fonts")
	if err := waitFonts(ctx, pg.t); err != nil {
		return rd, err
	}
	pg.r.mark("fonts")
	if plan.frames {
		if err := pg.frame(ctx); err != nil {
			return rd, err
		}
	}
	if pg.w.requestCount() != requested {
		// The layout found more to load (background images, fonts).
		pg.progress.enter("render.network_idle", "waiting for network idle after layout")
		if err := quietWait(ctx, pg, plan); err != nil {
			return rd, err
		}
		pg.r.mark("network idle after layout")
	}
	return rd, nil
}

// quietWait waits for the network quiet period of plan (waitQuiet), its
// steps each given a frame when plan gives frames.
func quietWait(ctx context.Context, pg *tabPage, plan settlePlan) error {
	var step func() error
	if plan.frames {
		step = pg.giveFrame
	}
	endedIdle, err := waitQuiet(ctx, pg.t, pg.w, plan.quiet, step, pg.probe)
	if endedIdle {
		pg.r.mark("quiet ended idle")
	}
	return err
}

// awaitWaitFor polls expr until it is truthy, then waits for the requests
// in flight. A page under BeginFrame control not ready when first asked
// gets frames while it is polled (a refused frame ends the wait), stopped
// before the print; one ready at once gets a frame only if one could
// change the print (a lazy image of the first screen starts loading in it,
// and is waited for).
func awaitWaitFor(ctx context.Context, pg *tabPage, expr string) error {
	pg.progress.enter("render.wait_for", fmt.Sprintf("waiting for wait_for %q to become truthy", truncate(expr, 100)))
	var pump *framePump
	var missed func(bool) error
	if pg.tabCtx != nil {
		missed = func(first bool) error {
			if first {
				pump = pumpFrames(pg.tabCtx, pg.b, pg.t)
			}
			return pg.framesFailed(pump.failed())
		}
		defer func() { _ = pump.stop() }() // a second stop is a no-op
	}
	if err := waitFor(ctx, pg.t, expr, &pg.progress.stage, missed, pg.virtualClock); err != nil {
		return err
	}
	if pg.tabCtx != nil && pump == nil {
		if frameless, err := isFrameless(ctx, pg.t); err != nil {
			return err
		} else if !frameless {
			if err := pg.frame(ctx); err != nil {
				return err
			}
		}
	}
	pg.r.mark("wait_for")
	pg.progress.enter("render.network_idle", "waiting for requests in flight after wait_for")
	if err := pg.w.waitNetworkIdle(ctx, 0); err != nil {
		return err
	}
	pg.r.mark("network idle after wait_for")
	return pg.framesFailed(pump.stop())
}

// checkPage fails a page whose main document the guard blocked or whose
// renderer crashed, records the page's warnings in st, and fails a page
// whose warnings o fails on.
func checkPage(pg *tabPage, o readyOptions, st *Stats) error {
	if err := pg.w.guard.mainBlocked(); err != nil {
		return err
	}
	if err := pg.w.checkCrashed(); err != nil {
		return err
	}
	st.Warnings, st.WarningsOmitted = pg.w.warnings.result()
	if err := pg.w.failures.failure(o.page); err != nil {
		return err
	}
	return pg.w.warnings.failure(o.failOn)
}

// measure reads and marks the laid-out page before its print: the anchor
// and heading marks of a manual's chapter (marks.go). It returns the print
// settings the page needs now: a page whose headings could not be marked
// (it broke the script by replacing what it calls) prints tagged with
// Chromium's outline, which the assembly takes before any mark.
func measure(ctx context.Context, pg *tabPage, o measureOptions, s spec.PrintSettings) (spec.PrintSettings, error) {
	s, err := fitOnePage(ctx, pg, o, s)
	if err != nil {
		return s, err
	}
	if !o.markAnchors && !o.markHeadings {
		return s, nil
	}
	pg.progress.enter("render.anchor_marks", "marking anchors and headings")
	failed, err := addMarks(ctx, pg.t, o.markAnchors, o.markHeadings)
	if err != nil {
		return s, err
	}
	if o.markAnchors && failed.Anchors != "" {
		pg.r.log.Info("marking anchors failed; links from other chapters to the page's elements find no target", "err", failed.Anchors)
	}
	if o.markHeadings && failed.Headings != "" {
		pg.r.log.Info("marking headings failed; the page prints tagged with Chromium's outline", "err", failed.Headings)
		s.Outline, s.Tagged = true, true
	}
	return s, nil
}

// giveFrame gives the page one frame (beginFrame).
func (pg *tabPage) giveFrame() error {
	return pg.framesFailed(beginFrame(pg.tabCtx, pg.b, pg.t))
}

// frame gives the page one frame and learns what it started: after a round
// trip through the page's session the requests the frame started (a lazy
// image) are known, their events having come first on that session.
func (pg *tabPage) frame(ctx context.Context) error {
	if err := pg.giveFrame(); err != nil {
		return err
	}
	if _, err := cdp.Call(ctx, pg.t, runtime.Evaluate, runtime.EvaluateParams{Expression: "0"}); err != nil {
		return fmt.Errorf("%w: after a frame: %v", ErrNavigation, err)
	}
	return nil
}

// framesFailed maps the failure of a BeginFrame (nil: none) to the
// render's error. A page whose renderer crashed fails as such. Otherwise
// Chromium refused the frame: the page may have missed frames (a
// requestAnimationFrame that never ran), so it is not printed; the
// browser's next tabs get Chromium's own frames, the retry one of them.
func (pg *tabPage) framesFailed(err error) error {
	if err == nil {
		return nil
	}
	if cerr := pg.w.checkCrashed(); cerr != nil {
		return cerr
	}
	if errors.Is(err, errNoFrameControl) && pg.b.frameControl.Swap(false) {
		pg.r.log.Warn("Chromium refused a BeginFrame; the browser's next tabs get its own frames", "err", err)
	}
	return fmt.Errorf("%w: %v", ErrNavigation, err)
}
