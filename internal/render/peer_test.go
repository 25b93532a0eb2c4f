package render

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The peer's design, the baseline of this package's comparisons: one
// Chromium with chromedp's default flags (bench/peer) and, per print, a bare
// tab in its shared default browser context, driven with plain chromedp and
// nothing of this package in the way. Tests compare the Renderer's output
// and isolation with it; benchmarks its cost.

// newPeer starts the peer's browser on the Chromium at path, closed at the
// end of the test. It counts as a live Renderer (register) while it runs:
// its browser is a child of the test process that the leftover scans of
// other tests must not take for theirs.
func newPeer(t testing.TB, path string) *peer.Browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stand := &Renderer{}
	register(stand)
	p, err := peer.Start(ctx, path)
	if err != nil {
		unregister(stand)
		t.Fatalf("starting the peer's browser: %v", err)
	}
	t.Cleanup(func() {
		p.Close()
		unregister(stand)
	})
	return p
}

// peerPDF prints src in a bare tab of p (barePrint) and returns the PDF.
// until, if not empty, is a condition the test knows the document's final
// state by (the late image arrived, the transition ended): the peer has no
// readiness of its own beyond readyState and wait_for.
func peerPDF(t *testing.T, p *peer.Browser, src Source, s spec.PrintSettings, until string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var buf bytes.Buffer
	if err := barePrint(ctx, p, src, s, until, &buf, func(string) {}); err != nil {
		t.Fatalf("the peer's print: %v", err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("%PDF-")) {
		t.Fatalf("the peer's print is not a PDF: %q", buf.Bytes()[:min(buf.Len(), 40)])
	}
	return buf.Bytes()
}

// barePrint is the peer's flow (peer.Browser.Print, or its URL route),
// with its steps passed to mark: a tab in the shared context, the
// document, readyState (and wait_for and until) polled every 10 ms, the
// print as a stream copied to w, the tab closed.
func barePrint(ctx context.Context, p *peer.Browser, src Source, s spec.PrintSettings, until string, w io.Writer, mark func(step string)) error {
	tctx, cancel := chromedp.NewContext(p.Context(), chromedp.WithNewWindow(false))
	closed := false
	defer func() {
		if !closed {
			cancel()
		}
	}()
	defer context.AfterFunc(ctx, cancel)()
	if err := chromedp.Do(tctx); err != nil {
		return err
	}
	mark("tab attached")
	t := chromedp.FromContext(tctx).Target
	if src.URL != "" {
		if _, err := cdp.Call(tctx, t, page.Navigate, page.NavigateParams{URL: src.URL}); err != nil {
			return err
		}
	} else if _, err := cdp.Call(tctx, t, page.SetDocumentContent, page.SetDocumentContentParams{FrameID: cdp.FrameID(t.TargetID), HTML: src.HTML}); err != nil {
		return err
	}
	mark("loaded")
	ready := `document.readyState === "complete"`
	for _, cond := range []string{s.WaitFor, until} {
		if cond != "" {
			ready += " && !!(" + cond + ")"
		}
	}
	for {
		res, err := cdp.Call(tctx, t, runtime.Evaluate, runtime.EvaluateParams{Expression: ready, ReturnByValue: new(true)})
		if err != nil {
			return err
		}
		if res.Result != nil && string(res.Result.Value) == "true" {
			break
		}
		if err := sleep(tctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	mark("ready")
	res, err := cdp.Call(tctx, t, page.PrintToPDF, PrintParams(s))
	if err != nil {
		return err
	}
	mark("printed")
	for {
		chunk, err := cdp.Call(tctx, t, cdpio.Read, cdpio.ReadParams{Handle: res.Stream, Size: readChunk})
		if err != nil {
			return err
		}
		if _, err := w.Write(chunk.Data); err != nil {
			return err
		}
		if chunk.EOF {
			break
		}
	}
	if _, err := cdp.Call(tctx, t, cdpio.Close, cdpio.CloseParams{Handle: res.Stream}); err != nil {
		return err
	}
	mark("streamed")
	cancel()
	closed = true
	mark("tab closed")
	return nil
}
