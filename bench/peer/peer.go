// Package peer drives Chromium the way a peer of pdfexport does, with
// nothing of pdfexport in the way, so that benchmarks can measure pdfexport
// against the design a user would pick instead, in the same run and on the
// same machine: Gotenberg's HTML route, a new tab per conversion in the
// browser's shared default context of one long-lived Chromium started with
// chromedp's default flags. It also reproduces pdfexport's previous design
// (a new browser context per render) as a baseline. It is benchmark support,
// never used by the product.
package peer

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser is one Chromium started with chromedp's default flags.
type Browser struct {
	ctx    context.Context
	cancel func()
	pid    int
}

// Start starts the Chromium at path (no sandbox when running as root, as
// every container deployment of a peer does); extra flags are added to
// chromedp's defaults (benchmarks: trusting a test server's key).
func Start(ctx context.Context, path string, extra ...chromedp.ExecAllocatorOption) (*Browser, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path))
	opts = append(opts, extra...)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// chromedp logs harmless protocol noise of such tabs (DOM events of a
	// document set without a navigation); a benchmark's output is not the
	// place for it.
	quiet := func(string, ...any) {}
	bctx, cancel := chromedp.NewContext(alloc, chromedp.WithBrowserOption(chromedp.WithBrowserLogf(quiet), chromedp.WithBrowserErrorf(quiet)))
	b := &Browser{ctx: bctx, cancel: func() { cancel(); cancelAlloc() }}
	stop := context.AfterFunc(ctx, b.cancel)
	err := chromedp.Do(bctx)
	if !stop() {
		err = fmt.Errorf("starting %s: %w", path, context.Cause(ctx))
	}
	if err != nil {
		b.cancel()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	b.pid = chromedp.FromContext(bctx).Browser.Process().Pid
	return b, nil
}

// PID is the browser's main process.
func (b *Browser) PID() int { return b.pid }

// Context is the browser's chromedp context: a caller can open tabs of its
// own in it (benchmarks that time each step of the peer's flow).
func (b *Browser) Context() context.Context { return b.ctx }

// Close stops the browser and waits for it.
func (b *Browser) Close() { b.cancel() }

// pollInterval is how often Print re-checks readiness (readyState, waitFor).
const pollInterval = 10 * time.Millisecond

// Print renders html in a new tab of the shared browser context, the
// peer's design: it sets the document, waits for readyState "complete"
// and, if waitFor is not empty, for that expression to be truthy, prints
// with params (as a stream), copies the PDF to w and closes the tab. It
// returns the PDF's size.
func (b *Browser) Print(ctx context.Context, html, waitFor string, params page.PrintToPDFParams, w io.Writer) (int64, error) {
	tctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewWindow(false))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if err := chromedp.Do(tctx); err != nil {
		return 0, fmt.Errorf("opening a tab: %w", err)
	}
	t := chromedp.FromContext(tctx).Target
	if _, err := cdp.Call(tctx, t, page.SetDocumentContent, page.SetDocumentContentParams{FrameID: cdp.FrameID(t.TargetID), HTML: html}); err != nil {
		return 0, fmt.Errorf("setting the document: %w", err)
	}
	return printTab(tctx, t, waitFor, params, w)
}

// PrintURL is the peer's URL route with extra HTTP headers (Gotenberg's
// extraHttpHeaders): a new tab in the shared context, the headers set on
// the tab for every request it makes (Network.setExtraHTTPHeaders), then
// navigate, wait for readyState "complete" and print as Print does.
func (b *Browser) PrintURL(ctx context.Context, url string, headers map[string]string, params page.PrintToPDFParams, w io.Writer) (int64, error) {
	tctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewWindow(false))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if err := chromedp.Do(tctx); err != nil {
		return 0, fmt.Errorf("opening a tab: %w", err)
	}
	t := chromedp.FromContext(tctx).Target
	if len(headers) > 0 {
		h := network.Headers{}
		for k, v := range headers {
			h[k] = v
		}
		if _, err := cdp.Call(tctx, t, network.Enable, network.EnableParams{}); err != nil {
			return 0, fmt.Errorf("enabling the network domain: %w", err)
		}
		if _, err := cdp.Call(tctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h}); err != nil {
			return 0, fmt.Errorf("setting the headers: %w", err)
		}
	}
	if _, err := cdp.Call(tctx, t, page.Navigate, page.NavigateParams{URL: url}); err != nil {
		return 0, fmt.Errorf("navigating: %w", err)
	}
	return printTab(tctx, t, "", params, w)
}

// printTab waits for the tab's document (and waitFor), prints it as a
// stream and copies the PDF to w.
func printTab(tctx context.Context, t *chromedp.Target, waitFor string, params page.PrintToPDFParams, w io.Writer) (int64, error) {
	ready := `document.readyState === "complete"`
	if waitFor != "" {
		ready += " && !!(" + waitFor + ")"
	}
	for {
		res, err := cdp.Call(tctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: ready, ReturnByValue: new(true)})
		if err != nil {
			return 0, fmt.Errorf("waiting for the page: %w", err)
		}
		if res.Result != nil && string(res.Result.Value) == "true" {
			break
		}
		select {
		case <-tctx.Done():
			return 0, tctx.Err()
		case <-time.After(pollInterval):
		}
	}
	params.TransferMode = page.PrintToPDFTransferModeReturnAsStream
	res, err := cdp.Call(tctx, t, page.PrintToPDF, params)
	if err != nil {
		return 0, fmt.Errorf("printing: %w", err)
	}
	var n int64
	for {
		chunk, err := cdp.Call(tctx, t, cdpio.Read, cdpio.ReadParams{Handle: res.Stream, Size: 512 << 10})
		if err != nil {
			return n, fmt.Errorf("reading the PDF: %w", err)
		}
		m, err := w.Write(chunk.Data)
		n += int64(m)
		if err != nil {
			return n, err
		}
		if chunk.EOF {
			break
		}
	}
	_, err = cdp.Call(tctx, t, cdpio.Close, cdpio.CloseParams{Handle: res.Stream})
	return n, err
}
