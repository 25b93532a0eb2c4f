package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Document options (options.metadata, options.watermark,
// options.encryption) are written into the PDF after Chromium printed it,
// with pdfcpu (pure Go), which reads a whole PDF into memory. So an export
// asking for none of them keeps the streaming path (Chromium → storage,
// nothing held), and one asking for any of them goes:
//
//  1. Chromium's stream is spooled to a temporary file in the worker's
//     private directory (Workspace; no more in memory than a copy
//     buffer), at most MaxPostProcessBytes;
//  2. the tab is released, and the file is post-processed file to file,
//     into a new file of its own in that directory, one post-processing
//     at a time per worker process (the Workspace's slot, shared by both
//     lanes), so the heap it costs is bounded by one document, not by
//     RENDER_CONCURRENCY or the number of lanes;
//  3. before it is written, the processed document is checked: the page
//     count Chromium printed, the tagging (StructTreeRoot, MarkInfo) and
//     the outline are still there, or the export fails for good saying
//     which was lost (never a PDF silently without them);
//  4. the output file is streamed into storage like a render.
//
// Both files are removed when the attempt ends.

// MaxPostProcessBytes bounds the PDF a document option post-processes:
// pdfcpu holds the whole document, and a tagged PDF of many small objects
// costs many times its size on the heap at the peak (docs/CAPACITY.md),
// image-heavy ones far less. One post-processing runs at a time per worker
// process, so this bound, times that factor, caps what a worker needs for
// it. A larger PDF with document options fails for good naming the limit.
const MaxPostProcessBytes = 32 << 20

// ErrPostProcess: the post-processing of the document options failed or
// would have lost part of the PDF. Never retried.
var ErrPostProcess = errors.New("document options")

// spool copies a render's stream to a new temporary file of ws, at most
// MaxPostProcessBytes when pdfcpu rewrites it (d.Rewrites), else at most
// MaxLinearizeBytes; the caller removes the file.
func spool(ws *Workspace, pdf io.Reader, d *spec.DocumentSettings) (path string, n int64, err error) {
	if d.Rewrites() {
		return spoolLimited(ws, pdf, MaxPostProcessBytes, errTooLargeToPostProcess)
	}
	return spoolLimited(ws, pdf, MaxLinearizeBytes, errTooLargeToLinearize)
}

// spoolLimited spools at most limit bytes, failing with tooLarge (which
// wraps errTooLarge) past it.
func spoolLimited(ws *Workspace, pdf io.Reader, limit int64, tooLarge error) (path string, n int64, err error) {
	f, err := ws.createTemp("spool-*.pdf")
	if err != nil {
		return "", 0, fmt.Errorf("spooling the PDF for its document options: %w", err)
	}
	path = f.Name()
	n, err = io.Copy(f, io.LimitReader(pdf, limit+1))
	err = errors.Join(err, f.Close())
	if err == nil && n > limit {
		err = tooLarge
	}
	if err != nil {
		_ = os.Remove(path)
		return "", n, err
	}
	return path, n, nil
}

// errTooLarge: a PDF over the post-processing limits; final.
var errTooLarge = fmt.Errorf("%w: the PDF is too large", ErrPostProcess)

var (
	errTooLargeToPostProcess = fmt.Errorf("%w: larger than %d MiB, the most the document options (metadata, watermark, encryption) post-process; export it without them, or in parts (page_ranges)", errTooLarge, MaxPostProcessBytes>>20)
	errTooLargeToLinearize   = fmt.Errorf("%w: larger than %d MiB, the most options.fast_web_view linearizes; export it without fast_web_view", errTooLarge, MaxLinearizeBytes>>20)
)

// keep is what post-processing must not lose.
type keep struct {
	pages   int
	tagged  bool
	outline bool
}

// postProcess writes the document options d into the PDF at in and writes
// the result to out; pw are the encryption's passwords (when d asks for
// encryption). Before writing, the document is checked against k: out
// receives nothing from a document that fails the check.
func postProcess(ctx context.Context, in string, out io.Writer, d *spec.DocumentSettings, pw spec.Passwords, k keep) (err error) {
	defer func() {
		// pdfcpu panics on some malformed input; a PDF Chromium printed
		// should never get here, but a worker must not die of one.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: post-processing failed: %v", ErrPostProcess, r)
		}
	}()
	return apply(ctx, in, out, d, pw, k)
}

func apply(ctx context.Context, in string, out io.Writer, d *spec.DocumentSettings, pw spec.Passwords, k keep) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	doc, err := engine.ReadDocument(ctx, f, engine.PrintedConf())
	if err != nil {
		return fmt.Errorf("%w: reading the printed PDF: %w", ErrPostProcess, err)
	}
	if w := d.Watermark; w != nil {
		if err := doc.AddMarks(ctx, []engine.Mark{watermarkMark(w)}, true); err != nil {
			return fmt.Errorf("%w: options.watermark: %w", ErrPostProcess, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if m := d.Metadata; m != nil {
		if err := doc.SetInfo(map[string]string{"Title": m.Title, "Author": m.Author, "Subject": m.Subject,
			"Keywords": strings.Join(m.Keywords, ", "), "Creator": m.Creator}); err != nil {
			return fmt.Errorf("%w: %w", ErrPostProcess, err)
		}
		if m.Language != "" {
			if err := doc.SetLang(m.Language); err != nil {
				return fmt.Errorf("%w: %w", ErrPostProcess, err)
			}
		}
	}
	if err := check(doc, k); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if e := d.Encryption; e != nil {
		if err := doc.Encrypt(engine.EncryptOptions{UserPassword: pw.User, OwnerPassword: pw.Owner, Allow: e.Allow}); err != nil {
			return fmt.Errorf("%w: options.encryption: %w", ErrPostProcess, err)
		}
	}
	// Classic: render.CountPages counts the pages of a stored artifact
	// whose info object is missing by scanning its page dictionaries.
	if err := doc.Write(out, true); err != nil {
		return fmt.Errorf("%w: %w", ErrPostProcess, err)
	}
	return nil
}

// watermarkMark is options.watermark as the engine's mark: its text as
// typed, in grey Helvetica, on top of every page.
func watermarkMark(w *spec.WatermarkSettings) engine.Mark {
	return engine.Mark{Source: engine.SourceText, Text: w.Text, Literal: true, Options: map[string]string{
		"font": "Helvetica", "points": strconv.FormatFloat(w.FontSizePt, 'g', -1, 64), "scale": "1 abs",
		"rot": strconv.FormatFloat(w.Angle, 'g', -1, 64), "opacity": strconv.FormatFloat(w.Opacity, 'g', -1, 64),
		"fillcolor": "#808080"}}
}

// check reports what of k the document lost in pdfcpu's hands. It runs
// on the processed document before it is written; pdfcpu's writer writes
// every catalog entry it checks (StructTreeRoot, MarkInfo, Outlines and
// Lang are among the entries it knows), which the worker's test confirms
// with qpdf on the written file.
func check(doc *engine.Document, k keep) error {
	pages, err := doc.Pages()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPostProcess, err)
	}
	tagged, err := doc.CatalogHas("StructTreeRoot", "MarkInfo")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPostProcess, err)
	}
	outline, _ := doc.CatalogHas("Outlines")
	var lost []string
	if pages != k.pages {
		lost = append(lost, fmt.Sprintf("pages (%d of %d left)", pages, k.pages))
	}
	if k.tagged && !tagged {
		lost = append(lost, "tagging (StructTreeRoot, MarkInfo)")
	}
	if k.outline && !outline {
		lost = append(lost, "the outline")
	}
	if len(lost) > 0 {
		return fmt.Errorf("%w: post-processing would lose %s; export without metadata, watermark and encryption, or without what was lost", ErrPostProcess, strings.Join(lost, " and "))
	}
	return nil
}

// postProcessed runs the document options on a spooled render under the
// worker's post-processing slot, into new files of the workspace: pdfcpu's
// rewrite (metadata, watermark, encryption), then the linearization (fast
// web view), which must come last because any rewrite undoes it. It
// returns the output's path (the caller removes it). Its errors are final
// (SkipRetry) unless ctx ended or a file could not be made.
func (h *Handler) postProcessed(ctx context.Context, in string, s spec.PrintSettings, pw spec.Passwords, pages int) (string, error) {
	ws := h.workspace
	if err := ws.acquire(ctx); err != nil {
		return "", err
	}
	defer ws.release()
	d, cur := s.Document, in
	final := func(err error) error {
		if cur != in {
			_ = os.Remove(cur)
		}
		if classify(attempt{ctx: ctx, err: err, pageFault: true, maxRetry: notCounted}) != verdictFailed {
			return err // stopped by our context, not the document's doing
		}
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	if d.Rewrites() {
		o, err := ws.createTemp("post-*.pdf")
		if err != nil {
			return "", fmt.Errorf("the file for the post-processed PDF: %w", err)
		}
		err = postProcess(ctx, in, o, d, pw, keep{pages: pages, tagged: s.Tagged, outline: s.Outline})
		if cerr := o.Close(); err == nil {
			err = cerr
		}
		cur = o.Name()
		if err != nil {
			return "", final(err)
		}
	}
	if d.FastWebView {
		o, err := ws.createTemp("linear-*.pdf")
		if err != nil {
			if cur != in {
				_ = os.Remove(cur)
			}
			return "", fmt.Errorf("the file for the linearized PDF: %w", err)
		}
		_ = o.Close()
		owner := ""
		if d.Encryption != nil {
			owner = pw.Owner
		}
		err = linearize(ctx, cur, o.Name(), owner)
		if cur != in {
			_ = os.Remove(cur)
		}
		cur = o.Name()
		if err != nil {
			return "", final(err)
		}
	}
	return cur, nil
}
