package render

import (
	"context"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
)

// current is the browser that renders now (nil if none).
func (r *Renderer) current() *browser {
	r.lock <- struct{}{}
	defer r.unlock()
	return r.cur
}

// pageTargets counts the page targets Chromium reports.
func (r *Renderer) pageTargets(ctx context.Context) (int, error) {
	b := r.current()
	if b == nil {
		return 0, context.Canceled
	}
	res, err := cdp.Call(ctx, b.session(), target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ti := range res.TargetInfos {
		if ti.Type == "page" {
			n++
		}
	}
	return n, nil
}
