package render

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdpio "github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// readChunk is the most bytes one IO.read asks for.
const readChunk = 512 << 10

const mmPerInch = 25.4

// PrintParams maps resolved print settings to the Page.printToPDF call a
// render makes (benchmarks give the same call to the peer they compare
// with).
func PrintParams(s spec.PrintSettings) page.PrintToPDFParams {
	top, right := s.MarginTopMM/mmPerInch, s.MarginRightMM/mmPerInch
	bottom, left := s.MarginBottomMM/mmPerInch, s.MarginLeftMM/mmPerInch
	p := page.PrintToPDFParams{
		Landscape:       new(s.Landscape),
		PrintBackground: new(s.PrintBackground),
		Scale:           s.Scale,
		PaperWidth:      s.PaperWidthIn,
		PaperHeight:     s.PaperHeightIn,
		MarginTop:       &top,
		MarginRight:     &right,
		MarginBottom:    &bottom,
		MarginLeft:      &left,
		PageRanges:      s.PageRanges,
		// Chromium 154+ tags by default: say false explicitly, tagging is
		// opt-in (a tagged PDF takes longer and is much larger). The
		// outline needs the tags.
		GenerateTaggedPDF:       new(s.Tagged || s.Outline),
		GenerateDocumentOutline: new(s.Outline),
		PreferCSSPageSize:       new(s.PreferCSSPageSize),
		TransferMode:            page.PrintToPDFTransferModeReturnAsStream,
	}
	if s.HeaderHTML != "" || s.FooterHTML != "" {
		p.DisplayHeaderFooter = new(true)
		// An empty template would print Chromium's default header or footer.
		p.HeaderTemplate, p.FooterTemplate = orEmptySpan(s.HeaderHTML), orEmptySpan(s.FooterHTML)
	}
	return p
}

func orEmptySpan(s string) string {
	if s == "" {
		return "<span></span>"
	}
	return s
}

// limits are Config.MaxPages and Config.MaxBytes (0: none).
type limits struct {
	pages int
	bytes int64
}

// printPage prints the page as a stream (Page.printToPDF) and returns the
// stream's handle. A page that nothing of can run before the print, under
// BeginFrame control and in print media, first skips the layout Chromium
// does after the print (skipLayoutAfterPrint).
func printPage(ctx context.Context, pg *tabPage, o printOptions, rd readiness) (cdpio.StreamHandle, error) {
	if rd.still && pg.tabCtx != nil && o.settings.Media == "print" && !o.mediaFeatures {
		pg.progress.at("preparing the print")
		if err := skipLayoutAfterPrint(ctx, pg.t, pg.w, rd.scripted); err != nil {
			return "", err
		}
	}
	if err := omitBackground(ctx, pg, o); err != nil {
		return "", err
	}
	pg.progress.enter("render.print", "printing")
	pg.r.mark("checks")
	res, err := cdp.Call(ctx, pg.t, page.PrintToPDF, PrintParams(o.settings))
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "page range") {
			return "", permanent{fmt.Errorf("%w: %w %q: %v", ErrPrint, ErrPageRanges, o.settings.PageRanges, err)}
		}
		return "", fmt.Errorf("%w: %v", ErrPrint, err)
	}
	return res.Stream, nil
}

// streamPDF hands the sink of o a reader of the printed stream h, in the
// context of the stream stage's span (the render's; tracing off, ctx
// itself), and records the PDF's size and pages. The stream closes after.
func streamPDF(ctx context.Context, pg *tabPage, h cdpio.StreamHandle, o streamOptions) error {
	s := &pdfStream{ctx: ctx, t: pg.t, h: h, maxPages: o.limits.pages, maxBytes: o.limits.bytes}
	defer s.close()
	sinkCtx := pg.progress.enter("render.stream", "streaming the PDF to the sink")
	sinkErr := o.sink(sinkCtx, s)
	o.stats.Bytes, o.stats.Pages = s.n, s.pages.count()
	switch {
	case s.err != nil: // the stream failed: that is the cause, whatever sink made of it
		return s.err
	case sinkErr != nil:
		return fmt.Errorf("%w: %w", ErrSink, sinkErr)
	case !s.eof:
		return fmt.Errorf("%w: sink returned after reading %d bytes, before the end of the PDF", ErrSink, s.n)
	}
	return nil
}

// pdfStream is an io.Reader that pulls the PDF from Chromium with IO.read as
// the reader asks for it and counts its pages on the way.
type pdfStream struct {
	ctx    context.Context
	t      *chromedp.Target
	h      cdpio.StreamHandle
	buf    []byte
	eof    bool // Chromium reported the end and buf is drained
	srcEOF bool // Chromium reported the end
	err    error
	n      int64
	pages  pageCounter
	closed bool

	maxPages int
	maxBytes int64
}

func (s *pdfStream) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.srcEOF {
			s.eof = true
			return 0, io.EOF
		}
		res, err := cdp.Call(s.ctx, s.t, cdpio.Read, cdpio.ReadParams{Handle: s.h, Size: readChunk})
		if err != nil {
			s.err = fmt.Errorf("%w: reading the PDF stream after %d bytes: %v", ErrPrint, s.n, err)
			return 0, s.err
		}
		s.buf, s.srcEOF = res.Data, res.EOF
		s.n += int64(len(res.Data))
		s.pages.write(res.Data)
		if s.srcEOF {
			s.pages.finish()
		}
		switch {
		case s.maxBytes > 0 && s.n > s.maxBytes:
			s.err = permanent{fmt.Errorf("%w: the PDF is larger than RENDER_MAX_BYTES=%d (cut off at %d bytes)", ErrLimit, s.maxBytes, s.n)}
		case s.maxPages > 0 && s.pages.count() > s.maxPages:
			s.err = permanent{fmt.Errorf("%w: the PDF has more than RENDER_MAX_PAGES=%d pages (cut off at %d)", ErrLimit, s.maxPages, s.pages.count())}
		}
		if s.err != nil {
			s.buf = nil
			return 0, s.err
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	if len(s.buf) == 0 && s.srcEOF {
		s.eof = true
	}
	return n, nil
}

// close releases the stream in Chromium. When the render context ended the
// tab's reader is gone too; closing the tab frees the stream then.
func (s *pdfStream) close() {
	if s.closed || s.ctx.Err() != nil {
		return
	}
	s.closed = true
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	_, _ = cdp.Call(ctx, s.t, cdpio.Close, cdpio.CloseParams{Handle: s.h})
}

// CountPages counts the pages of a PDF that Chromium printed, reading it once
// from r (for example an artifact stored earlier). It uses the same scan as
// Stats.Pages and is not a general PDF parser: page objects inside compressed
// object streams, which Chromium does not write, are not seen.
func CountPages(r io.Reader) (int, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, err := br.Peek(5); err != nil || string(head) != "%PDF-" {
		return 0, fmt.Errorf("not a PDF (no %%PDF- header): %q", head)
	}
	var c pageCounter
	buf := make([]byte, 64<<10)
	for {
		n, err := br.Read(buf)
		c.write(buf[:n])
		if err == io.EOF {
			c.finish()
			return c.count(), nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// pageCounter counts page objects ("/Type /Page", not "/Pages") in a PDF
// written in pieces. Chromium (Skia) writes page dictionaries uncompressed,
// which the tests check against pdfinfo. A match may straddle two pieces, so
// the last few bytes of a piece are carried over and scanned with the next.
type pageCounter struct {
	tail []byte
	n    int
}

// maxMatch bounds "/Type" + whitespace + "/Page" + one lookahead byte.
const maxMatch = 32

func (c *pageCounter) write(p []byte) {
	if len(c.tail) > 0 {
		// Scan the positions of the carried tail with enough of p to see
		// every match that starts in the tail.
		joined := append(c.tail, p[:min(len(p), maxMatch)]...)
		end := len(c.tail)
		complete := len(joined) >= end+maxMatch
		if !complete {
			// p is short: keep everything and wait for more.
			c.tail = joined
			return
		}
		c.n += countPages(joined, 0, end, false)
		c.tail = c.tail[:0]
	}
	if len(p) <= maxMatch {
		c.tail = append(c.tail[:0], p...)
		return
	}
	limit := len(p) - maxMatch
	c.n += countPages(p, 0, limit, false)
	c.tail = append(c.tail[:0], p[limit:]...)
}

func (c *pageCounter) finish() {
	c.n += countPages(c.tail, 0, len(c.tail), true)
	c.tail = nil
}

func (c *pageCounter) count() int { return c.n }

// countPages counts matches starting at positions [from, to) of b. atEOF
// says the data ends at len(b), which then ends a name.
func countPages(b []byte, from, to int, atEOF bool) int {
	n := 0
	for i := from; i < to; i++ {
		if b[i] != '/' || !hasPrefixAt(b, i, "/Type") {
			continue
		}
		j := i + len("/Type")
		for j < len(b) && isPDFSpace(b[j]) {
			j++
		}
		if !hasPrefixAt(b, j, "/Page") {
			continue
		}
		k := j + len("/Page")
		if k == len(b) {
			if atEOF {
				n++
			}
			continue
		}
		if isPDFSpace(b[k]) || isPDFDelim(b[k]) {
			n++
		}
	}
	return n
}

func hasPrefixAt(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool {
	return strings.IndexByte("()<>[]{}/%", c) >= 0
}

// Chromium lays a page out again for the screen as soon as its print ends
// (LocalFrame::EndPrinting), inside Page.printToPDF, though the tab closes
// next and nobody sees that layout, which on a long page is a good part of
// its renderer's main thread. skipLayoutAfterPrint makes that layout skip
// the body's contents. The page adopts a style sheet that locks them
// (content-visibility: hidden) in any media but print, and the print media
// the render emulated is lifted, so that "not print" is "after the print":
// Chromium sets print media for the print itself, which is unchanged (the
// pages the peer's bare tab prints: TestRender_LayoutAfterPrint).
//
// From the lift to the print the page is in screen media. Nothing of the
// page may run there, so the caller does this only when none can: no frame
// is made but the render's (so no animation frame, observer or media query
// listener runs), the page's clock is stopped or it runs no script, and
// (checked here) no request is in flight, a scripted page's idle probe
// (idle.go) saw it use nothing that runs its code from outside (a worker,
// socket, message channel, frame and the like), and the window has no
// beforeprint handler, which Chromium runs before the print starts. An
// afterprint handler runs after the PDF is made. A page that fools the
// checks (its own getEventListeners, or a probe it replaced) only gives its
// own handlers screen media.
func skipLayoutAfterPrint(ctx context.Context, t *chromedp.Target, w *pageWatch, scripted bool) error {
	if w.inflightCount() > 0 {
		return nil
	}
	res, err := cdp.Call(ctx, t, runtime.Evaluate, runtime.EvaluateParams{
		Expression: fmt.Sprintf("(%s)(%t)", lockAfterPrintExpr, scripted), ReturnByValue: new(true), IncludeCommandLineAPI: new(true),
	})
	if err != nil {
		return fmt.Errorf("%w: preparing the print: %v", ErrNavigation, err)
	}
	if res.ExceptionDetails != nil || res.Result == nil || string(res.Result.Value) != "true" {
		return nil // a beforeprint handler, no body, or the page broke the check
	}
	// Until this call the sheet's rule applies in no media the page is in.
	if _, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: ""}); err != nil {
		return fmt.Errorf("%w: preparing the print (lifting print media): %v", ErrNavigation, err)
	}
	return nil
}

// lockAfterPrintExpr, called with whether the page runs script, adopts the
// sheet of skipLayoutAfterPrint unless the idle probe of a scripted page is
// missing or says it is busy, the window has a beforeprint handler
// (getEventListeners: the command line API, which leaves names the page
// defined as they are) or the document has no body; true if it did.
const lockAfterPrintExpr = `(scripted) => {
	if (scripted) {
		const probe = window[Symbol.for('pdfexport.idle')];
		if (typeof probe !== 'function' || String(probe()).startsWith('busy')) return false;
	}
	if (typeof getEventListeners !== 'function' || !document.body) return false;
	if (getEventListeners(window).beforeprint?.length || window.onbeforeprint != null) return false;
	const sheet = new CSSStyleSheet();
	sheet.replaceSync('@media not print { body { content-visibility: hidden !important } }');
	document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
	return true;
}`
