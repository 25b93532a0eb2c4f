package render

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestRender_StartsNoBrowserUI: while renders run, on either Chromium build,
// the browser lists no browser_ui target. The full browser opens a window for
// the tab of each browser context, and each window used to start the web UI
// of its omnibox popup in two renderer processes of its own; that doubled the
// CPU of a render (see the package documentation). A Chromium that adds
// per-window UI under another feature name shows up here.
func TestRender_StartsNoBrowserUI(t *testing.T) {
	t.Parallel()
	for build, path := range testsupport.ChromiumBuilds(t) {
		t.Run(build, func(t *testing.T) {
			r := newRenderer(t, Config{ChromiumPath: path})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := make(chan []string, 1)
			go func() {
				uis := map[string]bool{}
				defer func() { seen <- slices.Sorted(maps.Keys(uis)) }()
				for ctx.Err() == nil {
					if res, err := cdp.Call(ctx, r.current().session(), target.GetTargets, target.GetTargetsParams{}); err == nil {
						for _, ti := range res.TargetInfos {
							if ti.Type == "browser_ui" {
								uis[ti.URL] = true
							}
						}
					}
					_ = sleep(ctx, 20*time.Millisecond)
				}
			}()
			for range 3 {
				mustRender(t, r, Source{HTML: multiPageHTML(3)}, settings(spec.Options{}))
			}
			cancel()
			if uis := <-seen; len(uis) > 0 {
				t.Errorf("browser UI targets during renders: %v", uis)
			}
		})
	}
}
