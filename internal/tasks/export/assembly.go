package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/assemble"
	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// assembleManual is the "render" of a manual: it streams the assembled
// PDF to sink.
func (h *Handler) assembleManual(ctx context.Context, p job, settings spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	pages := 0
	for _, c := range p.manual.chapters {
		pages += c.pages
	}
	if h.cfg.MaxPages > 0 && pages > h.cfg.MaxPages {
		return render.Stats{}, fmt.Errorf("%w: its chapters have %d pages, more than RENDER_MAX_PAGES (%d): %w", errManualLimit, pages, h.cfg.MaxPages, asynq.SkipRetry)
	}
	dir, err := h.workspace.mkdirTemp("manual-")
	if err != nil {
		return render.Stats{}, fmt.Errorf("a directory for the manual's chapters: %w", err)
	}
	defer os.RemoveAll(dir)
	parts, err := h.downloadChapters(ctx, p, dir)
	if err != nil {
		return render.Stats{}, err
	}
	opts := assemble.Options{Title: manualTitle(p, settings), Outline: settings.Outline, Tagged: settings.Structure,
		Lang: settings.Lang, Conformance: assemble.Conformance{UA: settings.PDFUA, PDFA: settings.PDFA}}
	if parts, err = h.frontMatter(ctx, settings, dir, parts, &opts); err != nil {
		return render.Stats{}, err
	}
	out := h.assemble(ctx, parts, opts, sink)
	stats := manualStats(p, parts, out.stats)
	switch asmErr, sinkErr := out.err, out.sinkErr; {
	case errors.Is(asmErr, errManualLimit):
		return stats, fmt.Errorf("%w: %w", asmErr, asynq.SkipRetry)
	case errors.Is(asmErr, assemble.ErrMalformed), errors.Is(asmErr, assemble.ErrUnsupported):
		return stats, fmt.Errorf("assembling the manual: %w: %w", asmErr, asynq.SkipRetry)
	case asmErr != nil:
		return stats, fmt.Errorf("assembling the manual: %w", asmErr)
	case sinkErr != nil:
		return stats, fmt.Errorf("%w: %w", render.ErrSink, sinkErr)
	}
	return stats, nil
}

// manualTitle is the manual's title: its metadata's, else its id and
// version.
func manualTitle(p job, settings spec.PrintSettings) string {
	if d := settings.Document; d != nil && d.Metadata != nil && d.Metadata.Title != "" {
		return d.Metadata.Title
	}
	return p.ManualID + " " + p.Version
}

// downloadChapters copies the manual's stored chapters into dir: the
// assembly's parts, in order.
func (h *Handler) downloadChapters(ctx context.Context, p job, dir string) ([]assemble.Part, error) {
	parts := make([]assemble.Part, 0, len(p.manual.chapters)+1)
	for i, c := range p.manual.chapters {
		path := filepath.Join(dir, "chapter-"+strconv.Itoa(i)+".pdf")
		if err := h.download(ctx, c.key, path); err != nil {
			return nil, fmt.Errorf("reading chapter %d (%s) from storage: %w", i, c.key, err)
		}
		ch := p.Source.Chapters[i]
		part := assemble.Part{Path: path, Title: ch.Title, Chapter: i}
		if ch.URL != "" {
			part.URL = spec.CanonicalURL(ch.URL)
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// frontMatter prints what the assembly adds to the chapters: the table of
// contents (options.toc), put before them, and the sheet of running
// headers and footers, which opts names as the overlay. The chapters'
// inspection it needs for them is left in opts for the assembly.
func (h *Handler) frontMatter(ctx context.Context, settings spec.PrintSettings, dir string, parts []assemble.Part, opts *assemble.Options) ([]assemble.Part, error) {
	decorated := settings.HeaderHTML != "" || settings.FooterHTML != ""
	if !settings.TOC && !decorated {
		return parts, nil
	}
	_, inspected := startStep(ctx, "manual.inspect")
	analysis, infos, err := inspectParts(ctx, parts)
	inspected(err)
	if err != nil {
		return nil, err
	}
	opts.Analysis = analysis // the chapters as inspected, which the assembly reads no more
	if settings.TOC {
		tocCtx, printed := startStep(ctx, "manual.contents")
		toc, n, err := h.tableOfContents(tocCtx, settings, dir, infos)
		printed(err)
		if err != nil {
			return nil, err
		}
		parts = append([]assemble.Part{toc}, parts...)
		infos = append([]partInfo{{title: toc.Title, pages: n}}, infos...)
	}
	if decorated {
		decoCtx, printed := startStep(ctx, "manual.decorations")
		opts.Overlay, err = h.decorations(decoCtx, settings, dir, opts.Title, infos)
		printed(err)
		if err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// assembly is how an assembly went: its stats, its own error and its
// sink's.
type assembly struct {
	stats        assemble.Stats
	err, sinkErr error
}

// assemble writes the manual from its parts into sink, through a pipe,
// at most RENDER_MAX_BYTES of it.
func (h *Handler) assemble(ctx context.Context, parts []assemble.Part, opts assemble.Options, sink func(context.Context, io.Reader) error) assembly {
	pr, pw := io.Pipe()
	var st assemble.Stats
	var asmErr error
	done := make(chan struct{})
	_, assembled := startStep(ctx, "manual.assemble")
	go func() {
		defer close(done)
		defer func() { assembled(asmErr) }()
		out := io.Writer(pw)
		if h.cfg.MaxBytes > 0 {
			out = &limitWriter{w: pw, left: h.cfg.MaxBytes}
		}
		st, asmErr = assemble.Assemble(ctx, out, parts, opts)
		pw.CloseWithError(asmErr) // nil: EOF
	}()
	sinkErr := sink(ctx, pr)
	pr.CloseWithError(errors.New("the sink stopped reading")) // ends Assemble if the sink stopped early
	<-done
	return assembly{stats: st, err: asmErr, sinkErr: sinkErr}
}

// manualStats are the stats of an assembled manual: its size, its
// chapters' warnings and what it lacks to be accessible, at most
// spec.MaxWarnings of them.
func manualStats(p job, parts []assemble.Part, st assemble.Stats) render.Stats {
	stats := render.Stats{Pages: st.Pages, Bytes: st.Bytes}
	warn := func(w spec.Warning) {
		if len(stats.Warnings) < spec.MaxWarnings {
			stats.Warnings = append(stats.Warnings, w)
		} else {
			stats.WarningsOmitted++
		}
	}
	for _, c := range p.manual.chapters {
		for _, w := range c.warnings {
			warn(w)
		}
	}
	for _, f := range st.Findings {
		warn(accessibilityWarning(p, parts[f.Part], f))
	}
	return stats
}

// accessibilityWarning names what part lacks for PDF/UA, and the chapter
// (or the table of contents) it is in.
func accessibilityWarning(p job, part assemble.Part, f assemble.Finding) spec.Warning {
	w := spec.Warning{Kind: spec.WarningAccessibility, Message: "the table of contents: " + f.String()}
	if part.Chapter >= 0 {
		c := p.Source.Chapters[part.Chapter]
		w.Message = "source.chapters[" + strconv.Itoa(part.Chapter) + "]: " + f.String()
		if c.URL != "" {
			w.URL = redact.URL(c.URL)
		}
	}
	return w
}

// limitWriter fails once more than left bytes were written.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if int64(len(b)) > l.left {
		return 0, fmt.Errorf("%w: the manual is larger than RENDER_MAX_BYTES", errManualLimit)
	}
	l.left -= int64(len(b))
	return l.w.Write(b)
}

// download copies a stored artifact to a new file at path.
func (h *Handler) download(ctx context.Context, key, path string) (err error) {
	ctx, done := startStep(ctx, "storage download")
	defer func() { done(err) }()
	rc, err := h.cfg.Store.Open(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	return toNewFile(path)(ctx, rc)
}

// toNewFile is a sink that copies a PDF into a file it creates at path
// (O_EXCL: never one that is there already, nor what a link points at).
func toNewFile(path string) func(context.Context, io.Reader) error {
	return func(_ context.Context, pdf io.Reader) error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, pdf)
		return errors.Join(err, f.Close())
	}
}

// partInfo is what the table of contents and the running headers need of
// a part: its title and its length.
type partInfo struct {
	title, url, lang string
	pages            int
}

func inspectParts(ctx context.Context, parts []assemble.Part) (*assemble.Analysis, []partInfo, error) {
	an, read, err := assemble.Analyze(ctx, parts)
	var bad *assemble.PartError
	switch {
	case errors.As(err, &bad):
		return nil, nil, fmt.Errorf("chapter %d: %w: %w", bad.Part, bad.Err, asynq.SkipRetry)
	case err != nil:
		return nil, nil, err
	}
	infos := make([]partInfo, len(parts))
	for i, part := range parts {
		info := read[i]
		infos[i] = partInfo{title: part.Title, url: part.URL, lang: info.Lang, pages: info.Pages}
		if infos[i].title == "" {
			infos[i].title = info.Title
		}
		if infos[i].title == "" {
			infos[i].title = "Chapter " + strconv.Itoa(i+1)
		}
	}
	return an, infos, nil
}

// decorations prints the running headers and footers of the whole manual
// as one sheet, a page for each of its pages, which the assembly draws
// over them: Chromium's classes pageNumber and totalPages count the
// manual's pages, chapterTitle is the title of the chapter a page belongs
// to, title the manual's, url the chapter's, date the day's. Each
// template's box is its margin: the header's the top one, the footer's the
// bottom one, across the page's width.
func (h *Handler) decorations(ctx context.Context, settings spec.PrintSettings, dir, title string, parts []partInfo) (string, error) {
	total := 0
	for _, p := range parts {
		total += p.pages
	}
	type chapter struct {
		T string `json:"t"`
		U string `json:"u"`
		N int    `json:"n"`
	}
	chapters := make([]chapter, len(parts))
	for i, p := range parts {
		chapters[i] = chapter{T: p.title, U: p.url, N: p.pages}
	}
	data, err := json.Marshal(struct {
		Chapters []chapter `json:"chapters"`
		Title    string    `json:"title"`
		Date     string    `json:"date"`
	}{chapters, title, time.Now().UTC().Format("2006-01-02")})
	if err != nil {
		return "", err
	}
	w, hgt := settings.PaperWidthIn, settings.PaperHeightIn
	if settings.Landscape {
		w, hgt = hgt, w
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><style>
@page{size:%[1]gin %[2]gin;margin:0}
html,body{margin:0;padding:0}
.pdx-p{position:relative;width:%[1]gin;height:calc(%[2]gin - 1px);overflow:hidden;break-after:page}
.pdx-p:last-child{break-after:auto}
.pdx-h,.pdx-f{position:absolute;left:0;width:100%%;overflow:hidden;font-size:10px;font-family:sans-serif}
.pdx-h{top:0;height:%[3]gmm}
.pdx-f{bottom:0;height:%[4]gmm}
</style></head><body><template id="pdx-h">%[5]s</template><template id="pdx-f">%[6]s</template>
<script>(() => {
const d = %[7]s;
const total = d.chapters.reduce((n, c) => n + c.n, 0);
let page = 0;
for (const c of d.chapters) {
	for (let k = 0; k < c.n; k++) {
		page++;
		const p = document.createElement('div');
		p.className = 'pdx-p';
		for (const [id, cls] of [['pdx-h', 'pdx-h'], ['pdx-f', 'pdx-f']]) {
			const box = document.createElement('div');
			box.className = cls;
			box.appendChild(document.getElementById(id).content.cloneNode(true));
			for (const [name, v] of [['pageNumber', page], ['totalPages', total], ['chapterTitle', c.t], ['title', d.title], ['url', c.u], ['date', d.date]]) {
				box.querySelectorAll('.' + name).forEach(e => { e.textContent = String(v); });
			}
			p.appendChild(box);
		}
		document.body.appendChild(p);
	}
}
window.__PDX_SHEET__ = true;
})();</script></body></html>`, w, hgt, settings.MarginTopMM, settings.MarginBottomMM, settings.HeaderHTML, settings.FooterHTML, data)
	sheet := spec.PrintSettings{Paper: settings.Paper, PaperWidthIn: settings.PaperWidthIn, PaperHeightIn: settings.PaperHeightIn,
		Landscape: settings.Landscape, PrintBackground: true, Scale: 1, Media: "print", WaitFor: "window.__PDX_SHEET__===true"}
	path := filepath.Join(dir, "decorations.pdf")
	st, err := h.cfg.Renderer.Render(ctx, render.Source{HTML: b.String()}, sheet, toNewFile(path))
	if err != nil {
		return "", fmt.Errorf("printing the manual's headers and footers: %w", err)
	}
	if st.Pages != total {
		return "", fmt.Errorf("printing the manual's headers and footers: %d pages for a manual of %d: %w", st.Pages, total, asynq.SkipRetry)
	}
	return path, nil
}

// langAttr is the table of contents' lang attribute: the manual's
// language, else its first chapter's, so that a tagged manual's contents
// are in a language too.
func langAttr(lang string, entries []partInfo) string {
	for _, e := range entries {
		if lang != "" {
			break
		}
		lang = e.lang
	}
	if lang == "" {
		return ""
	}
	return ` lang="` + html.EscapeString(lang) + `"`
}

// maxTOCPasses bounds how often the table of contents is printed again
// because its own length moved the page numbers it lists.
const maxTOCPasses = 3

// The table of contents' layout, in points: its heading's text and the
// space below it, each entry's text and the space below it. tocStyle
// prints them; tocPagesAtLeast counts them with a line at least
// tocMinLineHeight times its text's size.
const (
	tocHeadingFontPt, tocHeadingGapPt = 20, 12
	tocEntryFontPt, tocEntryGapPt     = 11, 4
	tocMinLineHeight                  = 1.1

	tocHeadingPt = tocHeadingFontPt*tocMinLineHeight + tocHeadingGapPt
	tocEntryPt   = tocEntryFontPt*tocMinLineHeight + tocEntryGapPt
)

// tocStyle is the table of contents' style sheet.
var tocStyle = fmt.Sprintf(`body{font-family:sans-serif;font-size:%dpt;margin:0}
h1{font-size:%dpt;margin:0 0 %dpt}
ol{list-style:none;margin:0;padding:0}
li{display:flex;align-items:baseline;margin:0 0 %dpt;break-inside:avoid}
li a{color:inherit;text-decoration:none;flex:0 1 auto}
li .dots{flex:1 1 auto;border-bottom:1px dotted #888;margin:0 4pt}
li .page{flex:0 0 auto;font-variant-numeric:tabular-nums}
`, tocEntryFontPt, tocHeadingFontPt, tocHeadingGapPt, tocEntryGapPt)

// tocPagesAtLeast is how many pages a table of contents of n entries
// takes at least with settings: entries of one line each, none broken
// across pages, on the page's height within its margins at its scale. A
// title that wraps only makes it more.
func tocPagesAtLeast(settings spec.PrintSettings, n int) int {
	height := settings.PaperHeightIn
	if settings.Landscape {
		height = settings.PaperWidthIn
	}
	scale := settings.Scale
	if scale <= 0 {
		scale = 1
	}
	avail := (height*72 - (settings.MarginTopMM+settings.MarginBottomMM)*72/25.4) / scale
	first := math.Floor((avail - tocHeadingPt) / tocEntryPt)
	perPage := math.Floor(avail / tocEntryPt)
	if first < 1 || perPage < 1 || float64(n) <= first {
		return 1
	}
	return 1 + int(math.Ceil((float64(n)-first)/perPage))
}

// tableOfContents prints the manual's table of contents, its page numbers
// the final ones: the first pass assumes the fewest pages it can take
// (tocPagesAtLeast), and a pass that finds otherwise prints it again with
// the length it found.
func (h *Handler) tableOfContents(ctx context.Context, settings spec.PrintSettings, dir string, entries []partInfo) (assemble.Part, int, error) {
	tocPages := tocPagesAtLeast(settings, len(entries))
	path := filepath.Join(dir, "contents.pdf")
	for pass := 1; ; pass++ {
		var b strings.Builder
		b.WriteString(`<!doctype html><html` + langAttr(settings.Lang, entries) + `><head><meta charset="utf-8"><title>Contents</title><style>
` + tocStyle + `</style></head><body><h1>Contents</h1><ol>`)
		page := tocPages + 1
		for i, e := range entries {
			fmt.Fprintf(&b, `<li><a href="%s">%s</a><span class="dots"></span><a class="page" href="%s">%d</a></li>`,
				assemble.ChapterURL(i), html.EscapeString(e.title), assemble.ChapterURL(i), page)
			page += e.pages
		}
		b.WriteString(`</ol></body></html>`)
		_ = os.Remove(path)
		// Printed without an outline: the manual's lists it as one entry.
		tocSettings := spec.ChapterSettings(settings)
		// A tagged manual's contents are tagged too: a list of links.
		tocSettings.Outline, tocSettings.Tagged = false, settings.Structure
		tocSettings.WaitFor = "" // the chapters' condition: the contents are ready when loaded
		st, err := h.cfg.Renderer.Render(ctx, render.Source{HTML: b.String()}, tocSettings, toNewFile(path))
		if err != nil {
			return assemble.Part{}, 0, fmt.Errorf("printing the table of contents: %w", err)
		}
		if st.Pages == tocPages || pass == maxTOCPasses {
			return assemble.Part{Path: path, Title: "Contents", Chapter: -1}, st.Pages, nil
		}
		tocPages = st.Pages
	}
}
