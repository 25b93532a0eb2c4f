package render

// One render: a tab slot, a browser context and tab of its own, the page
// flow (guard, media, load, readiness, print) and the mapping of failures
// to the sentinel errors.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

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
	// (and every <a name>) with an empty one-pixel link to AnchorPrefix plus the
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
	// (which Chromium's own outline needs, and which makes a long page's
	// print markedly slower). With MarkAnchors, a heading's mark also
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
	defer func() { r.observe(st, err) }()
	if err := r.checkRequest(src, sink); err != nil {
		return st, err
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

	err = r.renderInTab(ctx, b, r.newJob(src, settings, sink, &st))
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

// observe reports a render's outcome to the Observer.
func (r *Renderer) observe(st Stats, err error) {
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
}

// checkRequest refuses, before a render takes a slot, what can never
// render: no sink, not exactly one of URL and HTML, a URL off the
// allowlist.
func (r *Renderer) checkRequest(src Source, sink func(context.Context, io.Reader) error) error {
	if sink == nil {
		return permanent{fmt.Errorf("%w: nil sink", ErrSink)}
	}
	if (src.URL == "") == (src.HTML == "") {
		return permanent{fmt.Errorf("%w: source needs exactly one of URL and HTML", ErrNavigation)}
	}
	if src.URL != "" {
		return checkURL(r.cfg.AllowedHosts, src.URL)
	}
	return nil
}

// renderJob is one render's request, split by the stage that reads each
// part: an option of the page lands in the options of the one stage that
// applies it (a user agent or extra headers in loadOptions, a page
// measured to fit one sheet in measureOptions, a screenshot beside the
// print in printOptions).
type renderJob struct {
	tab     tabOptions     // openTab
	load    loadOptions    // loadPage
	ready   readyOptions   // waitReady, checkPage
	measure measureOptions // measure
	print   printOptions   // printPage
	capture captureOptions // capturePage, instead of printPage and streamPDF
	stream  streamOptions  // streamPDF
}

// tabOptions say which tab a render gets (openTab).
type tabOptions struct {
	url     string           // the source URL ("" for HTML): its origin gets auth
	auth    spec.Credentials // per-export credentials: a context with its own proxy listener
	session string           // Source.Session
}

// loadOptions say what the page loads and how (loadPage).
type loadOptions struct {
	url, html string // exactly one is set
	media     string // the CSS media type emulated from the load on
	// The page options of the load (pageopts.go): the user agent, the
	// cookies set before it, the media features, the scoped headers the
	// guard adds, the main document's statuses that fail it.
	userAgent       string
	cookies         []spec.PageCookie
	mediaFeatures   []spec.MediaFeature
	headers         []scopedHeader
	mainStatusFails func(code int) bool
	// viewport is a screenshot's, emulated before the load so that the
	// page is laid out once, at the size it is captured in.
	viewport *spec.ScreenshotSettings
}

// readyOptions say when the loaded page is ready to print (waitReady) and
// whether what it reported fails the render (checkPage).
type readyOptions struct {
	waitFor string // the page's own readiness expression ("" none)
	failOn  spec.FailOn
	page    *spec.PageOptions // what else fails the page (pagefail.go)
}

// measureOptions say what is read and marked in the laid-out page before
// its print (measure).
type measureOptions struct {
	markAnchors, markHeadings bool
	singlePage                bool // the paper fits the content on one page
}

// printOptions say how the page is printed (printPage).
type printOptions struct {
	settings       spec.PrintSettings
	omitBackground bool // a transparent default background
	// mediaFeatures are emulated: the print keeps the emulation as the
	// load set it (no skipLayoutAfterPrint, which lifts it).
	mediaFeatures bool
}

// streamOptions say where the PDF goes and how much of it may (streamPDF).
type streamOptions struct {
	sink   func(context.Context, io.Reader) error
	limits limits
	stats  *Stats // gets the PDF's pages and bytes, and the page's warnings
}

// newJob splits a render's request into the options of its stages.
func (r *Renderer) newJob(src Source, settings spec.PrintSettings, sink func(context.Context, io.Reader) error, st *Stats) *renderJob {
	job := &renderJob{
		tab: tabOptions{url: src.URL, auth: src.Auth, session: src.Session},
		load: loadOptions{url: src.URL, html: src.HTML, media: settings.Media, mainStatusFails: settings.Page.MainStatusFails,
			viewport: settings.Screenshot},
		ready:   readyOptions{waitFor: settings.WaitFor, failOn: settings.FailOn, page: settings.Page},
		measure: measureOptions{markAnchors: src.MarkAnchors, markHeadings: src.MarkHeadings},
		print:   printOptions{settings: settings},
		capture: captureOptions{shot: settings.Screenshot, viewportSet: settings.Screenshot != nil},
		stream:  streamOptions{sink: sink, limits: limits{r.cfg.MaxPages, r.cfg.MaxBytes}, stats: st},
	}
	if p := settings.Page; p != nil {
		job.load.userAgent, job.load.cookies, job.load.mediaFeatures = p.UserAgent, p.Cookies, p.MediaFeatures
		job.load.headers = compileHeaders(p.Headers)
		job.measure.singlePage = p.SinglePage
		job.print.omitBackground = p.OmitBackground
		job.print.mediaFeatures = len(p.MediaFeatures) > 0
	}
	return job
}

// renderInTab runs one render in a tab of its own (openTab), through the
// stages of its page (runPage), and maps its failure to a sentinel.
func (r *Renderer) renderInTab(ctx context.Context, b *browser, job *renderJob) error {
	tb, err := r.openTab(b, job.tab)
	if err != nil {
		return err
	}
	kept := false // the render succeeded: its session keeps the context
	defer func() { tb.release(kept) }()
	run := r.startRun(ctx, tb.ctx)
	defer run.stop()
	err = r.runTab(run, tb, job)
	run.progress.spans.end(err)
	if err == nil {
		kept = true
		return nil
	}
	return run.failure(ctx, b, err)
}

// runTab attaches the render's tab, unless it was made ahead, and runs the
// stages of its page while its JavaScript dialogs are dismissed.
func (r *Renderer) runTab(run *tabRun, tb *renderTab, job *renderJob) error {
	run.progress.enter("render.tab", "opening a tab")
	if err := tb.attach(run.ctx); err != nil {
		return err
	}
	t := tb.target()
	stopDialogs := tb.w.dismissDialogs(run.ctx, t, r.log)
	defer stopDialogs()
	return r.runPage(run.ctx, newTabPage(r, tb, run.progress), job)
}

// tabRun is a render's run in its tab: its context, which is the tab's
// (it ends when the browser dies) with the render deadline, and is also
// canceled by the caller and by Close; when it began; where it is.
type tabRun struct {
	ctx      context.Context
	began    time.Time
	limit    time.Duration
	progress *progress
	stop     func()
}

// startRun starts the run of a render on the tab of tabCtx; its deadline
// is Config.Timeout from now, or ctx's if that is sooner.
func (r *Renderer) startRun(ctx, tabCtx context.Context) *tabRun {
	began := time.Now()
	deadline := began.Add(r.cfg.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	cancelable, cancel := context.WithCancelCause(tabCtx)
	runCtx, cancelDeadline := context.WithDeadlineCause(cancelable, deadline, errRenderDeadline)
	runCtx = withSpan(runCtx, ctx)
	stopCaller := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	stopClosing := context.AfterFunc(r.closing, func() { cancel(ErrClosed) })
	return &tabRun{
		ctx:      runCtx,
		began:    began,
		limit:    deadline.Sub(began),
		progress: &progress{stage: "opening a tab", spans: newStages(runCtx)},
		stop: func() {
			stopClosing()
			stopCaller()
			cancelDeadline()
			cancel(nil)
		},
	}
}

// failure maps the error of a render's stages to its sentinel: the
// browser's death, the render deadline, Close and the end of the caller's
// ctx override what the stage returned, which names its sentinel already.
func (run *tabRun) failure(ctx context.Context, b *browser, err error) error {
	stage := run.progress.stage
	switch {
	case b.dead():
		return fmt.Errorf("%w while %s (pid %d): %v", ErrBrowserCrashed, stage, b.pid, err)
	case run.ctx.Err() == nil:
		return err
	}
	cause := context.Cause(run.ctx)
	switch {
	case errors.Is(cause, errRenderDeadline), errors.Is(cause, context.DeadlineExceeded):
		return fmt.Errorf("%w after %v (limit %v) while %s", ErrTimeout, time.Since(run.began).Round(time.Millisecond), run.limit.Round(time.Millisecond), stage)
	case errors.Is(cause, ErrClosed):
		return fmt.Errorf("%w while %s", ErrClosed, stage)
	case ctx.Err() != nil:
		return callerErr(ctx, stage)
	}
	return fmt.Errorf("%w: tab closed while %s: %v", ErrBrowserCrashed, stage, err)
}

// progress is where a render is: the stage its errors name, and the span
// of that stage in its trace.
type progress struct {
	stage string
	spans *stages
}

// at names the step the render is at now, within its stage's span.
func (p *progress) at(stage string) { p.stage = stage }

// enter starts the span name and names its first step; it returns the
// span's context.
func (p *progress) enter(name, stage string) context.Context {
	p.stage = stage
	return p.spans.next(name)
}

// runPage runs the stages of a render on its attached tab: the request
// guard on, load the source, wait until ready, check, measure, print,
// stream. The page closes while the guard still answers (detaching first,
// as chromedp's cancel does, would let Chromium resume paused requests).
// It returns errors that already wrap their sentinel; tabRun.failure
// overrides them when the browser died or the run ended.
func (r *Renderer) runPage(ctx context.Context, pg *tabPage, job *renderJob) (err error) {
	pg.progress.at("enabling the request guard")
	startGuard, stopGuard := guardPage(ctx, pg, job.load)
	defer stopGuard()
	defer func() { pg.tab.closePage(err == nil); r.mark("tab closed") }()
	if err := startGuard(); err != nil {
		return err
	}
	r.mark("guard on")
	if err := loadPage(ctx, pg, job.load); err != nil {
		return err
	}
	rd, err := waitReady(ctx, pg, job.ready)
	if err != nil {
		return err
	}
	if err := checkPage(pg, job.ready, job.stream.stats); err != nil {
		return err // before printing: nothing reaches the sink
	}
	settings, err := measure(ctx, pg, job.measure, job.print.settings)
	if err != nil {
		return err
	}
	if job.capture.shot != nil {
		err = captureAndStream(ctx, pg, job.capture, job.stream)
		r.mark("captured")
		return err
	}
	po := job.print
	po.settings = settings
	h, err := printPage(ctx, pg, po, rd)
	if err != nil {
		return err
	}
	r.mark("printed")
	err = streamPDF(ctx, pg, h, job.stream)
	r.mark("streamed")
	if err == nil && r.hooks.printed != nil {
		r.hooks.printed(ctx, pg.t)
	}
	return err
}
