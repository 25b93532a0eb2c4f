package render

// Frames on demand. Left to itself, Chromium gives every tab compositor
// frames: after the load it rasters and draws the viewport, and again on
// every change, work that a print never uses, since Page.printToPDF lays the
// document out again for paper and paints it straight into the PDF. On the
// headless shell a render's tab is instead created under BeginFrame control
// (Target.createTarget enableBeginFrameControl, with the browser-wide
// --run-all-compositor-stages-before-draw that it needs), so Chromium makes
// no frame of its own, and the render's readiness steps give frames where a
// page needs them (the package documentation says which), with
// noDisplayUpdates: each frame runs what a page can see of it
// (requestAnimationFrame callbacks, intersection observers and so lazy
// images, animations, layout) but commits and draws nothing. The print
// comes after the last frame.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// frameInterval is how often a page gets a frame while it loads and
// settles: Chromium's own rate, 60 a second, so that a page that animates
// or waits for animation frames reaches the state it would on screen as
// soon as it would.
const frameInterval = 16667 * time.Microsecond

// frameControlFlag is the browser flag BeginFrame control needs.
const frameControlFlag = "run-all-compositor-stages-before-draw"

// frameStillPending is how Chromium answers a BeginFrame while the tab's
// last one is still being made.
const frameStillPending = "Another frame is pending"

// errNoFrameControl: a BeginFrame failed while the page was live, so the
// page may have missed frames.
var errNoFrameControl = errors.New("BeginFrame failed")

// createTab creates a blank tab in the browser context id, under BeginFrame
// control when b has it, through the browser session, bounded and under
// b's context like createBrowserContext (a render's deadline must not lose
// the answer and with it the tab). It returns an empty ID, and no error,
// when b has no BeginFrame control: chromedp creates its tabs.
func createTab(b *browser, id cdp.BrowserContextID) (target.ID, error) {
	if !b.frameControl.Load() {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(b.ctx, contextOpTimeout)
	defer cancel()
	res, err := cdp.Call(ctx, b.session(), target.CreateTarget, target.CreateTargetParams{
		URL: "about:blank", BrowserContextID: id, EnableBeginFrameControl: new(true),
	})
	if err != nil {
		return "", fmt.Errorf("creating a tab: %w", err)
	}
	return res.TargetID, nil
}

// tabContext returns the chromedp context of a new tab of b in the browser
// context id (empty: the default one), with opts. When b has BeginFrame
// control the tab is created here (createTab) and the context attaches to
// it; otherwise chromedp creates it on the first Do. Either way the
// context's cancel closes the tab. frames says whether the tab is under
// BeginFrame control, and so needs pumpFrames while its page loads.
func tabContext(b *browser, id cdp.BrowserContextID, opts ...chromedp.ContextOption) (ctx context.Context, cancel context.CancelFunc, frames bool, err error) {
	tid, err := createTab(b, id)
	if err != nil {
		return nil, nil, false, err
	}
	switch {
	case tid != "": // the target is in its browser context already
		opts = append(opts, chromedp.WithTargetID(tid))
	case id != "":
		opts = append(opts, chromedp.WithExistingBrowserContext(id))
	}
	ctx, cancel = chromedp.NewContext(b.ctx, opts...)
	return ctx, cancel, tid != "", nil
}

// framePump gives one tab frames until stopped.
type framePump struct {
	stopping chan struct{}
	once     sync.Once
	done     chan struct{}
	err      error // set before done is closed
}

// beginFrameTimeout bounds the wait for one BeginFrame (beginFrame): a page
// whose main thread is busy answers only when it is done.
const beginFrameTimeout = 300 * time.Millisecond

// beginFrame gives the tab t one frame and waits (at most
// beginFrameTimeout) until it was made. The browser makes one at a time:
// two BeginFrames in flight at once, of any tabs, crash its GPU process
// ("overlapping IssueExternalBeginFrame"; TestRender_NoLeaksOverManyRenders
// found it). A page whose main thread stays busy longer (a long layout, a
// script that never yields) is not waited for: it gets the next frame when
// it is done, and the other tabs theirs meanwhile
// (TestRender_HungPageStallsNoOtherRender). The error is Chromium's refusal,
// or ctx's end.
func beginFrame(ctx context.Context, b *browser, t *chromedp.Target) error {
	fctx, cancel := context.WithTimeout(ctx, beginFrameTimeout)
	defer cancel()
	b.frameMu.Lock()
	_, err := cdp.Call(fctx, t, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{
		Interval: float64(frameInterval) / float64(time.Millisecond), NoDisplayUpdates: new(true),
	})
	b.frameMu.Unlock()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return nil
	case err != nil && strings.Contains(err.Error(), frameStillPending):
		// The tab's last frame, which beginFrameTimeout stopped waiting
		// for, is still being made: the page is busy, as above, and not
		// refusing frames.
		return nil
	case err != nil:
		return fmt.Errorf("%w: %v", errNoFrameControl, err)
	}
	return nil
}

// pumpFrames starts giving the tab t a frame every frameInterval
// (beginFrame), under tabCtx, the tab's own context: the render's deadline
// does not cut a BeginFrame short, and stop waits for the last. A
// BeginFrame that Chromium refuses ends the pump; stop reports it.
func pumpFrames(tabCtx context.Context, b *browser, t *chromedp.Target) *framePump {
	p := &framePump{stopping: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(frameInterval)
		defer tick.Stop()
		for {
			if err := beginFrame(tabCtx, b, t); err != nil {
				if tabCtx.Err() == nil {
					p.err = err
				}
				return
			}
			select {
			case <-p.stopping:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// failed returns why the pump ended early, if it has; it does not wait.
func (p *framePump) failed() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// stop ends the pump, waits for its last BeginFrame, and returns why the
// pump ended early, if it did. A nil pump is stopped.
func (p *framePump) stop() error {
	if p == nil {
		return nil
	}
	p.once.Do(func() { close(p.stopping) })
	<-p.done
	return p.err
}
