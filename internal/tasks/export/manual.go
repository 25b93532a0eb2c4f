package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/assemble"
	"github.com/pdfexport/pdfexport/internal/redact"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// A manual from chapters (source.chapters) is exported in two steps:
//
//  1. Its chapters, each a job of its own under its own key
//     (spec.Envelope.ChapterKey): stored already → reused; otherwise
//     through the render gate like any export, so a chapter is printed
//     once in the whole fleet however many manuals and workers want it.
//     The task works through them ChapterConcurrency at a time; it holds
//     no tab while it waits at a chapter's gate.
//  2. The manual itself under the manual's key, through the gate too:
//     its holder downloads the stored chapters into a private directory,
//     prints the table of contents (options.toc) and assembles the PDF
//     file to file (internal/assemble), streaming it into storage (or
//     through the document options' post-processing) like a render.

// manualPlan is what the chapter step leaves for the assembly.
type manualPlan struct {
	chapters []chapterDone
}

// chapterDone is a chapter stored under its key.
type chapterDone struct {
	key      string
	pages    int
	rendered bool
	warnings []spec.Warning
}

// errManualLimit: the manual would exceed RENDER_MAX_PAGES or
// RENDER_MAX_BYTES. Never retried.
var errManualLimit = errors.New("manual over a limit")

func (h *Handler) exportManual(ctx context.Context, log *slog.Logger, p job, key string) (spec.Result, error) {
	total := len(p.Source.Chapters)
	if obj, err := h.cfg.Store.Stat(ctx, key); err == nil && (!p.Force || storedBy(ctx, obj)) {
		res, err := h.reuse(ctx, key, obj, 0, false, p.Options.Settings().FailOn)
		res.Chapters = &spec.ChapterCounts{Total: total, Reused: total}
		return res, err
	}
	log.InfoContext(ctx, "manual: storing its chapters", "chapters", total)
	plan, err := h.chapters(ctx, log, p)
	if err != nil {
		return spec.Result{}, err
	}
	p.manual = plan
	res, err := h.export(ctx, log, p, key)
	if err != nil {
		return res, err
	}
	counts := &spec.ChapterCounts{Total: total}
	for _, c := range plan.chapters {
		if c.rendered {
			counts.Rendered++
		} else {
			counts.Reused++
		}
	}
	res.Chapters = counts
	return res, nil
}

// chapters makes sure every chapter of p is stored. A chapter that fails
// for good fails the manual at once, naming it; one that fails otherwise
// lets the others go on (they stay stored for the next attempt), and the
// manual is retried.
func (h *Handler) chapters(ctx context.Context, log *slog.Logger, p job) (*manualPlan, error) {
	n := len(p.Source.Chapters)
	plan := &manualPlan{chapters: make([]chapterDone, n)}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var (
		mu        sync.Mutex
		final     error
		retryable []error
		wg        sync.WaitGroup
	)
	// The same chapter listed twice is one job; its copies take its result.
	first := map[string]int{}
	var todo []int
	for i := range n {
		k := p.ChapterKey(i)
		if _, dup := first[k]; !dup {
			first[k] = i
			todo = append(todo, i)
		}
	}
	manualTask, _ := asynq.GetTaskID(ctx)
	stored := h.fanOut(ctx, log, p, manualTask, todo)
	// The fleet takes the queued chapters from the first on; this task
	// works from the last, so the two meet rather than wait for each other
	// at the gate.
	slices.Reverse(todo)
	workers := min(max(h.cfg.ChapterConcurrency, 1), len(todo))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				key := p.ChapterKey(i)
				cj := job{Envelope: p.ChapterEnvelope(i), markAnchors: true, session: chapterSession(manualTask)}
				if obj, ok := stored[i]; ok {
					cj.stored = &obj
				}
				res, err := h.export(ctx, log.With("chapter", i, "chapter_key", key), cj, key)
				if err == nil {
					plan.chapters[i] = chapterDone{key: key, pages: res.Pages, rendered: res.Rendered, warnings: res.Warnings}
					h.chapterStored(ctx, log, manualTask, key)
					continue
				}
				err = fmt.Errorf("source.chapters[%d] (%s): %w", i, chapterName(p.Source.Chapters[i]), err)
				mu.Lock()
				if errors.Is(err, asynq.SkipRetry) && ctx.Err() == nil {
					if final == nil {
						final = err
					}
					cancel(err)
				} else {
					retryable = append(retryable, err)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, i := range todo {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if final != nil {
		return nil, final
	}
	if err := context.Cause(ctx); err != nil && len(retryable) == 0 {
		return nil, err
	}
	if len(retryable) > 0 {
		return nil, fmt.Errorf("%d of %d chapters not stored yet (the others are kept for the next attempt): %w", len(retryable), n, errors.Join(retryable...))
	}
	for i := range n {
		if plan.chapters[i].key == "" {
			plan.chapters[i] = plan.chapters[first[p.ChapterKey(i)]]
		}
	}
	return plan, nil
}

// fanOut records the manual's progress and queues its chapters that are
// not stored as tasks of their own, once per manual (their task ids are
// the manual's plus the index, so a retry queues nothing new). Neither is
// needed for the manual to complete: a failure is logged, not returned.
// It returns what it found stored, by chapter index.
func (h *Handler) fanOut(ctx context.Context, log *slog.Logger, p job, manualTask string, todo []int) map[int]storage.Object {
	if manualTask == "" {
		return nil
	}
	if h.cfg.Progress != nil {
		if err := h.cfg.Progress.Start(ctx, manualTask, len(todo)); err != nil {
			log.WarnContext(ctx, "recording the manual's progress failed", "err", err)
		}
	}
	if h.cfg.ChapterTasks == nil || len(todo) < 2 {
		return nil
	}
	lookCtx, looked := startStep(ctx, "manual.lookup")
	missing, stored := h.unstored(lookCtx, p, todo)
	looked(nil)
	if len(missing) == 0 {
		return stored
	}
	tasks := make([]spec.ChapterTask, len(missing))
	for k, i := range missing {
		tasks[k] = p.ChapterTask(manualTask, i)
	}
	queue, _ := asynq.GetQueueName(ctx)
	queueCtx, queued := startStep(ctx, "manual.queue")
	err := h.cfg.ChapterTasks.EnqueueChapters(queueCtx, queue, tasks)
	queued(err)
	if err != nil {
		log.WarnContext(ctx, "queuing the manual's chapters for the fleet failed; this task prints them", "err", err)
	}
	return stored
}

// unstored are the chapters of todo that storage does not have (a forced
// manual: all of them), looked up a few at a time, and what it found for
// the others.
func (h *Handler) unstored(ctx context.Context, p job, todo []int) ([]int, map[int]storage.Object) {
	if p.Force {
		return todo, nil
	}
	missing := make([]bool, len(todo))
	objs := make([]storage.Object, len(todo))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(8, len(todo)) {
		wg.Go(func() {
			for k := range next {
				obj, err := h.cfg.Store.Stat(ctx, p.ChapterKey(todo[k]))
				missing[k], objs[k] = err != nil, obj
			}
		})
	}
	for k := range todo {
		next <- k
	}
	close(next)
	wg.Wait()
	var out []int
	stored := make(map[int]storage.Object, len(todo))
	for k, i := range todo {
		if missing[k] {
			out = append(out, i)
		} else {
			stored[i] = objs[k]
		}
	}
	return out, stored
}

func (h *Handler) chapterStored(ctx context.Context, log *slog.Logger, manualTask, key string) {
	if h.cfg.Progress == nil || manualTask == "" {
		return
	}
	if err := h.cfg.Progress.ChapterStored(ctx, manualTask, key); err != nil {
		log.WarnContext(ctx, "counting a stored chapter failed", "err", err)
	}
}

// ChapterTasks returns the handler of pdf:chapter tasks: a chapter a
// manual queued for the fleet, printed through the gate like any export
// and counted in the manual's progress. One whose manual is final already
// (completed, failed, canceled) ends at once. A chapter that fails for
// good is not retried: the manual's task meets the same failure and fails
// naming it.
func (h *Handler) ChapterTasks() asynq.Handler { return asynq.HandlerFunc(h.processChapter) }

func (h *Handler) processChapter(ctx context.Context, t *asynq.Task) error {
	taskID, _ := asynq.GetTaskID(ctx)
	log := h.cfg.Logger.With("task_id", taskID)
	ct, err := spec.DecodeChapterTask(t.Payload())
	if err != nil {
		return fmt.Errorf("%w: %w", redact.Error(err), asynq.SkipRetry)
	}
	env := ct.Manual()
	if err := env.Validate(h.cfg.Hosts); err != nil {
		return fmt.Errorf("%w: %w", redact.Error(err), asynq.SkipRetry)
	}
	log = log.With("manual_task", ct.ManualTask, "chapter", ct.Index, "manual_id", ct.ManualID, "version", ct.Version)
	if why := h.manualEnded(ctx, ct.ManualTask); why != "" {
		log.InfoContext(ctx, "the manual's chapter is not needed", "because", why)
		return nil
	}
	key := env.ChapterKey(0)
	ctx, stop := h.whileManualRuns(forManual(ctx, ct.ManualTask), ct.ManualTask)
	defer stop()
	if _, err := h.export(ctx, log.With("chapter_key", key), job{Envelope: env.ChapterEnvelope(0), markAnchors: true, session: chapterSession(ct.ManualTask)}, key); err != nil {
		if errors.Is(context.Cause(ctx), errManualEnded) {
			// Its render stopped and released the chapter's lock as
			// failed: another manual that needs the chapter takes it over.
			log.InfoContext(ctx, "the manual ended while its chapter printed; stopped")
			return nil
		}
		return redact.Error(err)
	}
	h.chapterStored(ctx, log, ct.ManualTask, key)
	return nil
}

// errManualEnded: the manual a chapter task printed for became final
// (canceled, failed) while it printed.
var errManualEnded = errors.New("the manual ended")

// manualCheckInterval is how often a chapter task looks whether its
// manual ended (one or two Redis reads each time per running chapter);
// manualCheckIntervalWatched is the same with Config.Outcomes, whose
// announcement ends the chapter at once, the look only catching a lost
// announcement.
const (
	manualCheckInterval        = time.Second
	manualCheckIntervalWatched = 10 * time.Second
)

// manualEnded says why a manual no longer needs its chapters ("" while it
// runs): final already, or canceled. A Redis error answers "": the
// chapter is printed, which costs at worst a render.
func (h *Handler) manualEnded(ctx context.Context, manualTask string) string {
	if h.cfg.Finisher != nil {
		if f, ok, err := h.cfg.Finisher.Recorded(ctx, manualTask); err == nil && ok {
			return "the manual is " + string(f.State)
		}
	}
	if c := h.cfg.Cancellations; c != nil {
		if canceled, err := c.Canceled(ctx, manualTask); err == nil && canceled {
			return "the manual was canceled"
		}
	}
	return ""
}

// whileManualRuns returns ctx canceled with errManualEnded once the manual
// ends, so that a chapter of a canceled manual stops printing; stop ends
// the watch and waits for it.
func (h *Handler) whileManualRuns(ctx context.Context, manualTask string) (context.Context, func()) {
	if h.cfg.Finisher == nil && h.cfg.Cancellations == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	interval := manualCheckInterval
	var announced <-chan spec.Final
	unwatch := func() {}
	if h.cfg.Outcomes != nil {
		if w, err := h.cfg.Outcomes.Watch(manualTask); err == nil {
			announced, interval, unwatch = w.C(), manualCheckIntervalWatched, w.Stop
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-announced:
				cancel(errManualEnded)
				return
			case <-t.C:
				if h.manualEnded(ctx, manualTask) != "" {
					cancel(errManualEnded)
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
		unwatch()
	}
}

// chapterSession is the render session of the chapters of the manual
// task manualTask ("" without a task: a context per chapter): one caller's
// one export, whose chapters may share a browser context.
func chapterSession(manualTask string) string {
	if manualTask == "" {
		return ""
	}
	return "manual:" + manualTask
}

// chapterName is how errors and logs name a chapter: its URL (redacted
// later with the error), or the size of its HTML.
func chapterName(c spec.Chapter) string {
	if c.URL != "" {
		return c.URL
	}
	return "inline HTML of " + strconv.Itoa(len(c.HTML)) + " bytes"
}

// assembleManual is the "render" of a manual: it streams the assembled
// PDF to sink.
func (h *Handler) assembleManual(ctx context.Context, p job, settings spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	plan := p.manual
	pages := 0
	for _, c := range plan.chapters {
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
	parts := make([]assemble.Part, 0, len(plan.chapters)+1)
	for i, c := range plan.chapters {
		path := filepath.Join(dir, "chapter-"+strconv.Itoa(i)+".pdf")
		if err := h.download(ctx, c.key, path); err != nil {
			return render.Stats{}, fmt.Errorf("reading chapter %d (%s) from storage: %w", i, c.key, err)
		}
		ch := p.Source.Chapters[i]
		part := assemble.Part{Path: path, Title: ch.Title, Chapter: i}
		if ch.URL != "" {
			part.URL = spec.CanonicalURL(ch.URL)
		}
		parts = append(parts, part)
	}
	title := p.ManualID + " " + p.Version
	if d := settings.Document; d != nil && d.Metadata != nil && d.Metadata.Title != "" {
		title = d.Metadata.Title
	}
	decorated := settings.HeaderHTML != "" || settings.FooterHTML != ""
	var overlay string
	var analysis *assemble.Analysis // the chapters as inspected, which the assembly reads no more
	if settings.TOC || decorated {
		_, inspected := startStep(ctx, "manual.inspect")
		var infos []partInfo
		analysis, infos, err = inspectParts(ctx, parts)
		inspected(err)
		if err != nil {
			return render.Stats{}, err
		}
		if settings.TOC {
			tocCtx, printed := startStep(ctx, "manual.contents")
			toc, n, err := h.tableOfContents(tocCtx, settings, dir, infos)
			printed(err)
			if err != nil {
				return render.Stats{}, err
			}
			parts = append([]assemble.Part{toc}, parts...)
			infos = append([]partInfo{{title: toc.Title, pages: n}}, infos...)
		}
		if decorated {
			decoCtx, printed := startStep(ctx, "manual.decorations")
			overlay, err = h.decorations(decoCtx, settings, dir, title, infos)
			printed(err)
			if err != nil {
				return render.Stats{}, err
			}
		}
	}
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
		st, asmErr = assemble.Assemble(ctx, out, parts, assemble.Options{Title: title, Outline: settings.Outline, Overlay: overlay,
			Tagged: settings.Structure, Lang: settings.Lang, Conformance: assemble.Conformance{UA: settings.PDFUA, PDFA: settings.PDFA},
			Analysis: analysis})
		pw.CloseWithError(asmErr) // nil: EOF
	}()
	sinkErr := sink(ctx, pr)
	pr.CloseWithError(errors.New("the sink stopped reading")) // ends Assemble if the sink stopped early
	<-done
	stats := render.Stats{Pages: st.Pages, Bytes: st.Bytes}
	warn := func(w spec.Warning) {
		if len(stats.Warnings) < spec.MaxWarnings {
			stats.Warnings = append(stats.Warnings, w)
		} else {
			stats.WarningsOmitted++
		}
	}
	for _, c := range plan.chapters {
		for _, w := range c.warnings {
			warn(w)
		}
	}
	for _, f := range st.Findings {
		warn(accessibilityWarning(p, parts[f.Part], f))
	}
	switch {
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
