package render

import (
	"context"
	"log/slog"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// dismissDialogs answers every JavaScript dialog (alert, confirm, prompt,
// beforeunload) the page opens by dismissing it. An open dialog blocks the
// page's script and its load, so an untrusted page with alert() would
// otherwise hold the tab until the render deadline. The returned func stops
// the goroutine and waits for it.
func (w *pageWatch) dismissDialogs(ctx context.Context, t *chromedp.Target, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case kind := <-w.dialogs:
				if _, err := cdp.Call(ctx, t, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false}); err != nil {
					log.Debug("dismissing a JavaScript dialog failed", "type", kind, "err", err)
					continue
				}
				log.Debug("dismissed a JavaScript dialog", "type", kind)
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
