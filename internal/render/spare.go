package render

// The spare tab: the browser context and tab of the next render, made while
// the current one loads and prints, so that a render does not wait for
// Chromium to create them (the tab's renderer and DevTools agents starting
// are a large share of a short render).

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
)

// spareTab is a browser context with one blank tab, attached and lean, that
// no render has used: as isolated as one made for the render that takes it.
type spareTab struct {
	b     *browser // holds a reference to it until taken or discarded
	id    cdp.BrowserContextID
	w     *pageWatch
	ctx   context.Context // the tab's chromedp context
	close context.CancelFunc
	// frames: the tab is under BeginFrame control (frames.go).
	frames bool
}

// stale reports whether the tab was made under BeginFrame control that its
// browser has since given up (framesFailed): its page would miss frames
// again, so a render takes a tab with Chromium's own frames instead.
func (sp *spareTab) stale() bool { return sp.frames && !sp.b.frameControl.Load() }

// takeSpare returns the spare tab of b, if one is ready, and starts making
// the next. A spare of another browser (replaced or recycled) is discarded.
func (r *Renderer) takeSpare(b *browser) *spareTab {
	r.spareMu.Lock()
	sp := r.spare
	r.spare = nil
	r.spareMu.Unlock()
	if sp != nil && (sp.b != b || sp.ctx.Err() != nil || sp.stale()) {
		r.discardSpare(sp)
		sp = nil
	}
	r.prepareSpare(b)
	if sp != nil {
		// The render's own reference (acquire) keeps the browser now.
		r.dropRef(sp.b)
	}
	return sp
}

// prepareSpare makes a spare tab of b in the background unless there is one
// or one is being made, b is retired or the Renderer is closing.
func (r *Renderer) prepareSpare(b *browser) {
	r.spareMu.Lock()
	defer r.spareMu.Unlock()
	if r.spare != nil || r.preparing || r.closing.Err() != nil || b.retired.Load() || b.dead() {
		return
	}
	r.preparing = true
	b.refs.Add(1)
	r.prep.Go(func() {
		sp, err := r.makeSpare(b)
		r.spareMu.Lock()
		r.preparing = false
		keep := err == nil && r.spare == nil && r.closing.Err() == nil && !b.retired.Load()
		if keep {
			r.spare = sp
		}
		r.spareMu.Unlock()
		switch {
		case keep:
		case sp != nil:
			r.discardSpare(sp)
		default:
			if !b.dead() {
				r.log.Debug("making a spare tab failed", "err", err)
			}
			r.dropRef(b)
		}
	})
}

// makeSpare creates a browser context and a tab in it (makeTab). On
// failure it cleans up and returns nil.
func (r *Renderer) makeSpare(b *browser) (*spareTab, error) {
	id, err := createBrowserContext(b, "")
	if err != nil {
		return nil, fmt.Errorf("creating a browser context: %w", err)
	}
	sp, err := r.makeTab(b, id)
	if err != nil {
		r.disposeBrowserContext(b, id)
		return nil, err
	}
	return sp, nil
}

// makeTab creates a tab in the browser context id, attaches it and
// prepares it (prepareTab: leaner, with the idle probe). On failure it
// closes the tab and returns nil; the context stays.
func (r *Renderer) makeTab(b *browser, id cdp.BrowserContextID) (*spareTab, error) {
	var observe func(string)
	if wo, ok := r.cfg.Observer.(WarningObserver); ok {
		observe = wo.RenderWarning
	}
	w := newPageWatch(r.log, observe)
	tabCtx, closeTab, frames, err := tabContext(b, id, chromedp.WithListener(w.onEvent), chromedp.WithNewWindow(false))
	if err != nil {
		return nil, err
	}
	sp := &spareTab{b: b, id: id, w: w, ctx: tabCtx, close: closeTab, frames: frames}
	// Bounded: a tab that does not open in time, or a Close meanwhile,
	// cancels the attach.
	stopTimer := time.AfterFunc(tabOpenTimeout, closeTab)
	stopClosing := context.AfterFunc(r.closing, closeTab)
	err = chromedp.Do(tabCtx)
	if err == nil {
		err = r.prepareTab(tabCtx, chromedp.FromContext(tabCtx).Target)
	}
	stopTimer.Stop()
	stopClosing()
	if err != nil {
		if t := chromedp.FromContext(tabCtx).Target; t != nil {
			closeTarget(b, t.TargetID)
		}
		closeTab()
		return nil, fmt.Errorf("opening a tab: %w", err)
	}
	return sp, nil
}

// discardSpare closes the spare's tab, disposes of its context and drops
// its reference to the browser.
func (r *Renderer) discardSpare(sp *spareTab) {
	if t := chromedp.FromContext(sp.ctx).Target; t != nil {
		closeTarget(sp.b, t.TargetID)
	}
	sp.close()
	r.disposeBrowserContext(sp.b, sp.id)
	r.dropRef(sp.b)
}

// dropSpare discards the spare tab, if any, once no spare is being made
// (Close).
func (r *Renderer) dropSpare() {
	r.prep.Wait()
	r.spareMu.Lock()
	sp := r.spare
	r.spare = nil
	r.spareMu.Unlock()
	if sp != nil {
		r.discardSpare(sp)
	}
}
