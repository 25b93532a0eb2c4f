package render

// The stage of a screenshot, in place of the print and its stream: the
// ready page laid out in the screenshot's viewport, captured as an image
// (Page.captureScreenshot) and handed to the sink whole, an image being
// bounded by its pixels.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/headlessexperimental"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// ErrNoElement: the screenshot's selector matched no element with a
// visible box. Not retryable: the same page matches the same elements.
var ErrNoElement = errors.New("screenshot selector matched no element")

// NoElementError is the ErrNoElement error naming the selector.
type NoElementError struct{ Selector string }

func (e *NoElementError) Error() string {
	return fmt.Sprintf("%v: the selector '%s' matched no element with a visible box", ErrNoElement, e.Selector)
}

// Is makes errors.Is(err, ErrNoElement) true.
func (e *NoElementError) Is(target error) bool { return target == ErrNoElement }

// captureOptions say how the page is captured instead of printed
// (capturePage); a nil shot prints it.
type captureOptions struct {
	shot *spec.ScreenshotSettings
	// viewportSet: the load emulated the shot's viewport already.
	viewportSet bool
}

// setViewport emulates the viewport of the screenshot s.
func setViewport(ctx context.Context, pg *tabPage, s *spec.ScreenshotSettings) error {
	if _, err := cdp.Call(ctx, pg.t, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(s.Width), Height: int64(s.Height), DeviceScaleFactor: s.DeviceScaleFactor}); err != nil {
		return fmt.Errorf("%w: setting the viewport %dx%d: %v", ErrPrint, s.Width, s.Height, err)
	}
	return nil
}

// transparentBackground is Emulation.setDefaultBackgroundColorOverride
// with a color of alpha 0, which cdp.RGBA leaves out (its default: 1).
var transparentBackground = cdp.Command[transparentParams, cdp.Empty]{Method: emulation.CommandSetDefaultBackgroundColorOverride}

// transparentParams are its parameters, spelled out.
type transparentParams struct{}

func (transparentParams) MarshalJSON() ([]byte, error) {
	return []byte(`{"color":{"r":0,"g":0,"b":0,"a":0}}`), nil
}

// captureAndStream captures the page as o says and streams the image to
// the sink of so, recording its size.
func captureAndStream(ctx context.Context, pg *tabPage, o captureOptions, so streamOptions) error {
	img, err := capturePage(ctx, pg, o)
	if err != nil {
		return err
	}
	if so.limits.bytes > 0 && int64(len(img)) > so.limits.bytes {
		return permanent{fmt.Errorf("%w: the image is larger than RENDER_MAX_BYTES=%d (%d bytes)", ErrLimit, so.limits.bytes, len(img))}
	}
	// An image is one page: what a reuse reports of a stored artifact,
	// whose info a page count of 0 marks as incomplete.
	so.stats.Bytes, so.stats.Pages = int64(len(img)), 1
	sinkCtx := pg.progress.enter("render.stream", "streaming the image to the sink")
	rd := bytes.NewReader(img)
	if err := so.sink(sinkCtx, rd); err != nil {
		return fmt.Errorf("%w: %w", ErrSink, err)
	}
	if rd.Len() > 0 {
		return fmt.Errorf("%w: sink returned after reading %d bytes, before the end of the image", ErrSink, len(img)-rd.Len())
	}
	return nil
}

// capturePage lays the page out in the viewport of o, with a transparent
// default background when asked, and captures it: the whole page (a
// capture beyond the viewport without a clip), the viewport's size from
// the top of the page (clip), or the box of the selector's element.
func capturePage(ctx context.Context, pg *tabPage, o captureOptions) ([]byte, error) {
	s := o.shot
	pg.progress.enter("render.capture", "capturing the screenshot")
	if s.OmitBackground {
		if _, err := cdp.Call(ctx, pg.t, transparentBackground, transparentParams{}); err != nil {
			return nil, fmt.Errorf("%w: making the background transparent: %v", ErrPrint, err)
		}
	}
	if !o.viewportSet {
		if err := setViewport(ctx, pg, s); err != nil {
			return nil, err
		}
	}
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormat(s.Format), CaptureBeyondViewport: new(true),
		FromSurface: new(true), OptimizeForSpeed: new(s.OptimizeForSpeed)}
	switch {
	case s.Selector != "":
		clip, err := elementClip(ctx, pg.t, s.Selector)
		if err != nil {
			return nil, err
		}
		p.Clip = clip
	case s.Clip:
		p.Clip = &page.Viewport{Width: float64(s.Width), Height: float64(s.Height), Scale: 1}
	}
	if s.Format == "jpeg" {
		p.Quality = new(int64(s.Quality))
	}
	pg.r.mark("checks")
	return captureScreenshot(ctx, pg, p)
}

// captureScreenshot runs Page.captureScreenshot. A tab under BeginFrame
// control draws nothing of its own, and the capture waits for a drawn
// frame: it gets frames that draw until the capture returns.
func captureScreenshot(ctx context.Context, pg *tabPage, p page.CaptureScreenshotParams) ([]byte, error) {
	if pg.tabCtx == nil {
		res, err := cdp.Call(ctx, pg.t, page.CaptureScreenshot, p)
		if err != nil {
			return nil, fmt.Errorf("%w: capturing the screenshot: %v", ErrPrint, err)
		}
		return res.Data, nil
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var res page.CaptureScreenshotResult
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = cdp.Call(cctx, pg.t, page.CaptureScreenshot, p)
	}()
	tick := time.NewTicker(frameInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			if err != nil {
				return nil, fmt.Errorf("%w: capturing the screenshot: %v", ErrPrint, err)
			}
			return res.Data, nil
		case <-tick.C:
			if ferr := drawFrame(pg.tabCtx, pg.b, pg.t); ferr != nil {
				cancel()
				<-done
				return nil, pg.framesFailed(ferr)
			}
		}
	}
}

// drawFrame gives the tab t one frame that draws, unlike beginFrame's,
// under the browser's one-BeginFrame-at-a-time rule. A busy page is not
// waited for past beginFrameTimeout.
func drawFrame(ctx context.Context, b *browser, t *chromedp.Target) error {
	fctx, cancel := context.WithTimeout(ctx, beginFrameTimeout)
	defer cancel()
	b.frameMu.Lock()
	_, err := cdp.Call(fctx, t, headlessexperimental.BeginFrame, headlessexperimental.BeginFrameParams{
		Interval: float64(frameInterval) / float64(time.Millisecond)})
	b.frameMu.Unlock()
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil, errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), frameStillPending):
		return nil
	}
	return fmt.Errorf("%w: %v", errNoFrameControl, err)
}

// elementClip is the box of the first element selector matches, in the
// document's coordinates (the viewport's plus its scroll offset), which a
// capture beyond the viewport takes.
func elementClip(ctx context.Context, t *chromedp.Target, selector string) (*page.Viewport, error) {
	expr := fmt.Sprintf(`(() => {
	const el = document.querySelector(%s);
	if (!el) return { found: false };
	const r = el.getBoundingClientRect();
	return { found: true, x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height };
})()`, strconv.Quote(selector))
	res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ReturnByValue: new(true)})
	if err != nil {
		return nil, fmt.Errorf("%w: measuring the selector's element: %v", ErrPrint, err)
	}
	var box struct {
		Found               bool
		X, Y, Width, Height float64
	}
	if res.ExceptionDetails != nil || res.Result == nil || json.Unmarshal(res.Result.Value, &box) != nil ||
		!box.Found || box.Width <= 0 || box.Height <= 0 {
		// An exception is a selector the page cannot parse: it matches
		// nothing either.
		return nil, &NoElementError{Selector: selector}
	}
	return &page.Viewport{X: box.X, Y: box.Y, Width: box.Width, Height: box.Height, Scale: 1}, nil
}
