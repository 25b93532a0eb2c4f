package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/hibiken/asynq"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"github.com/pdfexport/pdfexport/internal/assemble/pdfperm"
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

var disablePdfcpuConfig sync.Once

// pdfcpuConf is the configuration of one post-processing: no config
// directory (pdfcpu would otherwise write one under $HOME), offline, no
// optimization (which rewrites resources and costs time), relaxed
// validation (Chromium's PDFs are fine, but a strict check costs time and
// refuses harmless quirks).
func pdfcpuConf() *model.Configuration {
	disablePdfcpuConfig.Do(api.DisableConfigDir)
	conf := model.NewDefaultConfiguration()
	conf.Offline = true
	conf.ValidationMode = model.ValidationRelaxed
	conf.Optimize = false
	conf.OptimizeBeforeWriting = false
	conf.PostProcessValidate = false
	return conf
}

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

// nStandIn is what pdfcpu gets for the n of each `\n` in a watermark's
// text. pdfcpu turns those two characters into a line break, with no
// escape for them, and the text is one line of printable Latin-1 as typed
// ("C:\new"). So the n is sent as code 0x86, which a validated text never
// holds (a C1 control): WinAnsi's dagger, exactly as wide as n in
// Helvetica (556/1000 em), so the watermark is laid out as the text, and
// restoreStandIns turns it back into n in the watermark's content stream.
const nStandIn = '\u0086'

// watermarkText is the text pdfcpu gets for the watermark text t, and
// whether it holds stand-ins for restoreStandIns. pdfcpu formats %p, %P,
// %t and %v in watermark text; %% is a %.
func watermarkText(t string) (string, bool) {
	t = strings.ReplaceAll(t, "%", "%%")
	if !strings.Contains(t, `\n`) {
		return t, false
	}
	return strings.ReplaceAll(t, `\n`, `\`+string(nStandIn)), true
}

// restoreStandIns puts the n of every `\n` back into the watermark's form
// XObjects: the stream objects AddWatermarks added to pctx (those not in
// before).
func restoreStandIns(pctx *model.Context, before map[int]bool) error {
	for n, e := range pctx.Table {
		if before[n] || e == nil {
			continue
		}
		sd, ok := e.Object.(types.StreamDict)
		if !ok || sd.Subtype() == nil || *sd.Subtype() != "Form" {
			continue
		}
		if err := sd.Decode(); err != nil {
			return fmt.Errorf("object %d: %w", n, err)
		}
		b := []byte{byte(nStandIn)}
		if !bytes.Contains(sd.Content, b) {
			continue
		}
		sd.Content = bytes.ReplaceAll(sd.Content, b, []byte("n"))
		if err := sd.Encode(); err != nil {
			return fmt.Errorf("object %d: %w", n, err)
		}
		e.Object = sd
	}
	return nil
}

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
	pctx, err := api.ReadAndValidate(f, pdfcpuConf())
	if err != nil {
		return fmt.Errorf("%w: reading the printed PDF: %w", ErrPostProcess, err)
	}
	if w := d.Watermark; w != nil {
		text, standIns := watermarkText(w.Text)
		desc := fmt.Sprintf("font:Helvetica, points:%g, scale:1 abs, rot:%g, opacity:%g, fillcolor:#808080", w.FontSizePt, w.Angle, w.Opacity)
		wm, err := pdfcpu.ParseTextWatermarkDetails(text, desc, true, types.POINTS)
		if err != nil {
			return fmt.Errorf("%w: options.watermark: %w", ErrPostProcess, err)
		}
		before := make(map[int]bool, len(pctx.Table))
		for n := range pctx.Table {
			before[n] = true
		}
		if err := pdfcpu.AddWatermarks(pctx, nil, wm); err != nil {
			return fmt.Errorf("%w: adding the watermark: %w", ErrPostProcess, err)
		}
		if standIns {
			if err := restoreStandIns(pctx, before); err != nil {
				return fmt.Errorf("%w: writing the watermark: %w", ErrPostProcess, err)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if m := d.Metadata; m != nil {
		props := map[string]string{}
		for name, v := range map[string]string{"Title": m.Title, "Author": m.Author, "Subject": m.Subject,
			"Keywords": strings.Join(m.Keywords, ", "), "Creator": m.Creator} {
			if v != "" {
				props[name] = v
			}
		}
		if len(props) > 0 {
			if err := pdfcpu.PropertiesAdd(pctx, props); err != nil {
				return fmt.Errorf("%w: writing the metadata: %w", ErrPostProcess, err)
			}
		}
		if m.Language != "" {
			root, err := pctx.Catalog()
			if err != nil {
				return fmt.Errorf("%w: the catalog: %w", ErrPostProcess, err)
			}
			root["Lang"] = types.StringLiteral(m.Language)
		}
	}
	if err := check(pctx, k); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if e := d.Encryption; e != nil {
		pctx.Cmd = model.ENCRYPT
		pctx.UserPW, pctx.OwnerPW = pw.User, pw.Owner
		pctx.EncryptUsingAES, pctx.EncryptKeyLength = true, 256
		pctx.Permissions = pdfperm.Flags(e.Allow)
	}
	// No object streams: page dictionaries stay uncompressed, as Chromium
	// writes them, so render.CountPages counts the pages of a stored
	// artifact whose info object is missing.
	pctx.WriteObjectStream, pctx.WriteXRefStream = false, false
	if err := api.WriteContext(pctx, out); err != nil {
		return fmt.Errorf("%w: writing the PDF: %w", ErrPostProcess, err)
	}
	return nil
}

// check reports what of k the document lost in pdfcpu's hands. It runs
// on the processed document before it is written; pdfcpu's writer writes
// every catalog entry it checks (StructTreeRoot, MarkInfo, Outlines and
// Lang are among the entries it knows), which the worker's test confirms
// with qpdf on the written file.
func check(pctx *model.Context, k keep) error {
	if err := pctx.EnsurePageCount(); err != nil {
		return fmt.Errorf("%w: counting the pages: %w", ErrPostProcess, err)
	}
	root, err := pctx.Catalog()
	if err != nil {
		return fmt.Errorf("%w: the catalog: %w", ErrPostProcess, err)
	}
	var lost []string
	if pctx.PageCount != k.pages {
		lost = append(lost, fmt.Sprintf("pages (%d of %d left)", pctx.PageCount, k.pages))
	}
	if k.tagged && (root["StructTreeRoot"] == nil || root["MarkInfo"] == nil) {
		lost = append(lost, "tagging (StructTreeRoot, MarkInfo)")
	}
	if k.outline && root["Outlines"] == nil {
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
