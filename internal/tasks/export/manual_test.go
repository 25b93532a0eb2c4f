package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/tasks/export"
	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// chapterSite serves a small manual of linked chapters and counts the
// requests of each page.
type chapterSite struct {
	srv  *httptest.Server
	hits map[string]*atomic.Int64
}

var chapterPages = map[string]string{
	"intro.html": `<h1>Introduction</h1><p>Start here. Then read <a href="guide.html#deep-section">the deep section of the guide</a>
and <a href="/docs/reference.html">the reference</a>, or <a href="https://example.org/elsewhere">somewhere else</a>.</p>`,
	"guide.html": `<h1>Guide</h1><h2 id="first-section">First section</h2>` + strings.Repeat(`<p>Filler paragraph of the guide.</p>`, 90) +
		`<h2 id="deep-section">Deep section</h2><p>DEEP-SECTION-TEXT is here.</p><p><a href="intro.html">Back to the start</a></p>`,
	"reference.html": `<h1>Reference</h1><h2 id="api">API</h2><p>REFERENCE-TEXT. See <a href="#api">the API</a> and <a href="guide.html">the guide</a>.</p>`,
}

func startChapterSite(t *testing.T) *chapterSite {
	t.Helper()
	s := &chapterSite{hits: map[string]*atomic.Int64{}}
	for name := range chapterPages {
		s.hits[name] = &atomic.Int64{}
	}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/docs/")
		body, ok := chapterPages[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.hits[name].Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>%s page</title></head><body>%s</body></html>`, strings.TrimSuffix(name, ".html"), body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *chapterSite) url(name string) string { return s.srv.URL + "/docs/" + name }

// manualEnv is a worker's handler with a Chromium, a file store, a lock
// Redis and a queue Redis, allowed to reach the site.
type manualEnv struct {
	client *exportclient.Client
	dir    string
}

func startManualEnv(t *testing.T, site *chapterSite, asynqConcurrency, chapterConcurrency int) *manualEnv {
	t.Helper()
	return startManualEnvWith(t, site, asynqConcurrency, chapterConcurrency, nil)
}

// startManualEnvWith is startManualEnv with the handler's configuration
// changed by tune.
func startManualEnvWith(t *testing.T, site *chapterSite, asynqConcurrency, chapterConcurrency int, tune func(*export.Config)) *manualEnv {
	t.Helper()
	queue, locks := testsupport.StartRedis(t), testsupport.StartRedis(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	files, err := storage.NewFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(site.srv.Listener.Addr().String())
	hosts := allowlist.MustParse("127.0.0.1:" + port)
	renderer, err := render.New(render.Config{ChromiumPath: testsupport.ChromiumPath(t), Concurrency: 2, Timeout: 30 * time.Second, Logger: log, AllowedHosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = renderer.Close() })
	lockRedis := redis.NewClient(&redis.Options{Addr: locks.Addr(), DialTimeout: 300 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = lockRedis.Close() })
	gate := lock.NewGate(lock.NewMutex(lockRedis, lock.Config{TTL: 5 * time.Second, FailOpen: true, OpTimeout: time.Second, Logger: log}))
	cfg := export.Config{Store: files, Renderer: renderer, Gate: gate, Logger: log, Namespace: dir,
		Hosts: spec.Hosts{Sources: hosts}, ChapterConcurrency: chapterConcurrency, MaxPages: 5000}
	if tune != nil {
		tune(&cfg)
	}
	h, err := export.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: queue.Addr()}, asynq.Config{
		Concurrency: asynqConcurrency, TaskCheckInterval: 20 * time.Millisecond, Logger: testsupport.QuietAsynq{}, LogLevel: asynq.FatalLevel,
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return 100 * time.Millisecond },
	})
	mux := asynq.NewServeMux()
	mux.Handle(tasks.TypeExport, h)
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	// The handler is this build's but announces nothing (no fleet): the
	// client must not take it for an older worker.
	client, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: queue.Addr()}, MaxRetry: 2, AllowedHosts: hosts.String(),
		OlderWorkers: exportclient.AllowOlderWorkers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return &manualEnv{client: client, dir: dir}
}

func (e *manualEnv) export(t *testing.T, r exportclient.Request) exportclient.Status {
	t.Helper()
	job, err := e.client.Enqueue(context.Background(), r)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	st, err := e.client.Wait(ctx, job.TaskID, 20*time.Millisecond)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return st
}

// pdfLinks is what qpdf (an independent reader) sees of a PDF's
// navigation: its pages, its outline, and every link of every page.
type pdfNav struct {
	pages   int
	outline []navEntry
	links   []navLink
}

type navEntry struct {
	title string
	page  int
	kids  []navEntry
}

type navLink struct {
	onPage int    // 1-based
	uri    string // an external link
	toPage int    // an internal one, 1-based
}

func readNav(t *testing.T, path string) pdfNav {
	t.Helper()
	out, err := exec.Command("qpdf", "--json=2", "--json-key=pages", "--json-key=outlines", "--json-key=qpdf", path).Output()
	if err != nil {
		t.Fatalf("qpdf --json %s: %v", path, err)
	}
	var doc struct {
		Pages []struct {
			Object string `json:"object"`
		} `json:"pages"`
		Outlines []json.RawMessage `json:"outlines"`
		QPDF     []json.RawMessage `json:"qpdf"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	// Values are read as dictionaries where one is expected: a tagged
	// PDF's objects are arrays and numbers too.
	var objects map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if len(doc.QPDF) < 2 {
		t.Fatal("qpdf json without objects")
	}
	if err := json.Unmarshal(doc.QPDF[1], &objects); err != nil {
		t.Fatal(err)
	}
	pageOf := map[string]int{}
	for i, p := range doc.Pages {
		pageOf[p.Object] = i + 1
	}
	dictOf := func(key string) map[string]json.RawMessage {
		var d map[string]json.RawMessage
		_ = json.Unmarshal(objects[key].Value, &d)
		return d
	}
	nav := pdfNav{pages: len(doc.Pages)}
	var entries func(raw []json.RawMessage) []navEntry
	entries = func(raw []json.RawMessage) []navEntry {
		var es []navEntry
		for _, r := range raw {
			var o struct {
				Title string            `json:"title"`
				Page  int               `json:"destpageposfrom1"`
				Kids  []json.RawMessage `json:"kids"`
			}
			if err := json.Unmarshal(r, &o); err != nil {
				t.Fatal(err)
			}
			es = append(es, navEntry{title: o.Title, page: o.Page, kids: entries(o.Kids)})
		}
		return es
	}
	nav.outline = entries(doc.Outlines)
	for i, p := range doc.Pages {
		var annots []string
		_ = json.Unmarshal(dictOf("obj:" + p.Object)["/Annots"], &annots)
		for _, a := range annots {
			v := dictOf("obj:" + a)
			l := navLink{onPage: i + 1}
			var dest []any
			if json.Unmarshal(v["/Dest"], &dest) == nil && len(dest) > 0 {
				ref, _ := dest[0].(string)
				l.toPage = pageOf[ref]
			}
			var action map[string]any
			if json.Unmarshal(v["/A"], &action) == nil {
				uri, _ := action["/URI"].(string)
				l.uri = strings.TrimPrefix(uri, "u:")
			}
			nav.links = append(nav.links, l)
		}
	}
	return nav
}

// pageText is the text of one page (pdftotext).
func pageText(t *testing.T, path string, page int) string {
	t.Helper()
	n := strconv.Itoa(page)
	out, err := exec.Command("pdftotext", "-f", n, "-l", n, "-layout", path, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return string(out)
}

func (e *manualEnv) artifact(st exportclient.Status) string {
	return filepath.Join(e.dir, filepath.FromSlash(st.Result.ArtifactKey))
}

// TestManual_ChaptersBecomeOneNavigablePDF: three linked chapters become
// one PDF whose outline has an entry per chapter with its headings beneath,
// whose table of contents lists the real page numbers, and whose links
// between chapters, with or without a fragment, land inside it.
func TestManual_ChaptersBecomeOneNavigablePDF(t *testing.T) {
	site := startChapterSite(t)
	e := startManualEnv(t, site, 2, 2)
	req := exportclient.Request{ManualID: "guide", Version: "1.0", Options: exportclient.Options{Outline: true, TOC: true},
		Chapters: []exportclient.Chapter{
			{URL: site.url("intro.html"), Title: "Getting started", Revision: "r1"},
			{URL: site.url("guide.html"), Revision: "r1"},
			{URL: site.url("reference.html"), Title: "Reference", Revision: "r1"},
		}}
	st := e.export(t, req)
	if st.State != "completed" || st.Result == nil {
		t.Fatalf("export: %s %s", st.State, st.Error)
	}
	if c := st.Result.Chapters; c == nil || *c != (exportclient.ChapterCounts{Total: 3, Rendered: 3}) {
		t.Fatalf("chapters = %+v, want 3 rendered", st.Result.Chapters)
	}
	path := e.artifact(st)
	nav := readNav(t, path)
	if nav.pages != st.Result.Pages {
		t.Fatalf("qpdf counts %d pages, the result says %d", nav.pages, st.Result.Pages)
	}

	// Outline: Contents, then one entry per chapter, in order, with the
	// chapter's own headings beneath it.
	titles := []string{"Contents", "Getting started", "guide page", "Reference"}
	if len(nav.outline) != len(titles) {
		t.Fatalf("outline has %d top-level entries, want %d: %+v", len(nav.outline), len(titles), nav.outline)
	}
	for i, want := range titles {
		if nav.outline[i].title != want {
			t.Errorf("outline entry %d = %q, want %q", i, nav.outline[i].title, want)
		}
	}
	guide := nav.outline[2]
	deepPage := 0
	var walk func([]navEntry)
	walk = func(es []navEntry) {
		for _, e := range es {
			if e.title == "Deep section" {
				deepPage = e.page
			}
			walk(e.kids)
		}
	}
	walk(guide.kids)
	if deepPage == 0 {
		t.Fatalf("the guide's heading 'Deep section' is not beneath its chapter entry: %+v", guide)
	}
	if !strings.Contains(pageText(t, path, deepPage), "DEEP-SECTION-TEXT") {
		t.Fatalf("the outline's 'Deep section' points at page %d, which does not show it", deepPage)
	}
	if deepPage == guide.page {
		t.Fatalf("the deep section should be pages after the guide's start (%d)", guide.page)
	}

	// Table of contents: page 1, listing each chapter with the page the
	// outline says it starts on.
	toc := pageText(t, path, 1)
	for _, entry := range nav.outline[1:] {
		line := ""
		for _, l := range strings.Split(toc, "\n") {
			if strings.Contains(l, entry.title) {
				line = l
			}
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[len(fields)-1] != strconv.Itoa(entry.page) {
			t.Errorf("contents line for %q = %q, want it to end with page %d", entry.title, line, entry.page)
		}
	}

	// Links: none points back at a chapter's URL; the intro's link to the
	// guide's deep section lands on that section's page; the external one
	// stays external.
	var toDeep, external, internal int
	for _, l := range nav.links {
		if strings.HasPrefix(l.uri, site.srv.URL) {
			t.Errorf("page %d still links to %s", l.onPage, l.uri)
		}
		if strings.HasPrefix(l.uri, "https://anchor.") {
			t.Errorf("page %d kept an anchor mark %s", l.onPage, l.uri)
		}
		if l.uri == "https://example.org/elsewhere" {
			external++
		}
		if l.toPage > 0 {
			internal++
		}
		if l.onPage == nav.outline[1].page && l.toPage == deepPage {
			toDeep++
		}
	}
	if toDeep != 1 || external != 1 {
		t.Fatalf("intro → deep section links: %d, external links: %d; want 1 and 1 (links %+v)", toDeep, external, nav.links)
	}
	// Contents (3 titles + 3 numbers), intro → guide#deep and → reference,
	// guide → intro, reference → #api and → guide.
	if internal < 6+2+1+2 {
		t.Fatalf("%d internal links, want at least 11: %+v", internal, nav.links)
	}
}

// TestManual_ChangedChapterIsTheOnlyOneRendered: the next version of a
// manual whose chapters keep their revisions but one reuses the others,
// and an identical export reuses the whole manual.
func TestManual_ChangedChapterIsTheOnlyOneRendered(t *testing.T) {
	site := startChapterSite(t)
	e := startManualEnv(t, site, 2, 2)
	req := func(version, guideRevision string) exportclient.Request {
		return exportclient.Request{ManualID: "guide", Version: version, Options: exportclient.Options{Outline: true},
			Chapters: []exportclient.Chapter{
				{URL: site.url("intro.html"), Revision: "r1"},
				{URL: site.url("guide.html"), Revision: guideRevision},
				{URL: site.url("reference.html"), Revision: "r1"},
			}}
	}
	first := e.export(t, req("1.0", "r1"))
	second := e.export(t, req("1.1", "r2"))
	again := e.export(t, req("1.1", "r2"))
	for _, st := range []exportclient.Status{first, second, again} {
		if st.State != "completed" {
			t.Fatalf("export: %s %s", st.State, st.Error)
		}
	}
	for _, c := range []struct {
		name string
		got  *exportclient.ChapterCounts
		want exportclient.ChapterCounts
	}{
		{"first version", first.Result.Chapters, exportclient.ChapterCounts{Total: 3, Rendered: 3}},
		{"next version, guide revised", second.Result.Chapters, exportclient.ChapterCounts{Total: 3, Rendered: 1, Reused: 2}},
		{"the same again", again.Result.Chapters, exportclient.ChapterCounts{Total: 3, Reused: 3}},
	} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("%s: chapters = %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if second.Result.ArtifactKey == first.Result.ArtifactKey || again.Result.ArtifactKey != second.Result.ArtifactKey || again.Result.Rendered {
		t.Errorf("keys: %s, %s, %s (again rendered: %v)", first.Result.ArtifactKey, second.Result.ArtifactKey, again.Result.ArtifactKey, again.Result.Rendered)
	}
	for name, want := range map[string]int64{"intro.html": 1, "guide.html": 2, "reference.html": 1} {
		if got := site.hits[name].Load(); got != want {
			t.Errorf("%s fetched %d times, want %d", name, got, want)
		}
	}
}

// TestManual_OneSlotWorkerCompletesManyManuals: a manual waiting for its
// chapters holds no slot they need, so a worker with one handler slot and
// one chapter at a time completes manuals enqueued all at once.
func TestManual_OneSlotWorkerCompletesManyManuals(t *testing.T) {
	site := startChapterSite(t)
	e := startManualEnv(t, site, 1, 1)
	var ids []string
	for i := range 8 {
		job, err := e.client.Enqueue(context.Background(), exportclient.Request{ManualID: "m" + strconv.Itoa(i), Version: "1",
			Chapters: []exportclient.Chapter{{URL: site.url("intro.html"), Revision: "r1"}, {HTML: "<h1>Own chapter " + strconv.Itoa(i) + "</h1>"}, {URL: site.url("reference.html"), Revision: "r1"}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, job.TaskID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, id := range ids {
		st, err := e.client.Wait(ctx, id, 50*time.Millisecond)
		if err != nil || st.State != "completed" {
			t.Fatalf("manual %s: %v %s %s", id, err, st.State, st.Error)
		}
	}
	if got := site.hits["intro.html"].Load(); got != 1 {
		t.Errorf("the shared chapter was fetched %d times, want 1", got)
	}
}

// TestManual_FailedChapterNamesItself: a chapter that fails for good
// fails the manual, naming its index and URL; the chapters that did
// render stay stored.
func TestManual_FailedChapterNamesItself(t *testing.T) {
	site := startChapterSite(t)
	e := startManualEnv(t, site, 2, 1)
	missing := site.url("missing.html")
	st := e.export(t, exportclient.Request{ManualID: "broken", Version: "1",
		Chapters: []exportclient.Chapter{{URL: site.url("intro.html"), Revision: "r1"}, {URL: missing}, {URL: site.url("reference.html"), Revision: "r1"}}})
	if st.State != "failed" || !strings.Contains(st.Error, "source.chapters[1]") || !strings.Contains(st.Error, "/docs/missing.html") {
		t.Fatalf("state %s, error %q: want failed naming source.chapters[1] and its URL", st.State, st.Error)
	}
	// The task works from the last chapter: the reference printed before
	// the missing one failed, and stays stored for the next attempt.
	stored, _ := filepath.Glob(filepath.Join(e.dir, "_chapters", "*.pdf"))
	if len(stored) != 1 || site.hits["reference.html"].Load() != 1 {
		t.Fatalf("stored chapters: %v (reference fetched %d times), want the reference's", stored, site.hits["reference.html"].Load())
	}
	if _, err := os.Stat(filepath.Join(e.dir, "broken")); !os.IsNotExist(err) {
		t.Fatalf("a manual was stored for a failed export: %v", err)
	}
}

// TestManual_FooterCountsTheWholeManual: a footer with pageNumber,
// totalPages and chapterTitle counts the manual's pages, not each
// chapter's, and names the chapter each page belongs to; the chapters
// themselves are printed without it, so they stay shared with manuals
// that have another footer.
func TestManual_FooterCountsTheWholeManual(t *testing.T) {
	site := startChapterSite(t)
	e := startManualEnv(t, site, 2, 2)
	footer := `<div style="font-size:9px;text-align:center;width:100%">PAGE <span class="pageNumber"></span> OF <span class="totalPages"></span> IN <span class="chapterTitle"></span></div>`
	chapters := []exportclient.Chapter{
		{URL: site.url("intro.html"), Title: "Getting started", Revision: "r1"},
		{URL: site.url("guide.html"), Title: "The guide", Revision: "r1"},
	}
	st := e.export(t, exportclient.Request{ManualID: "footed", Version: "1", Chapters: chapters,
		Options: exportclient.Options{Outline: true, TOC: true, FooterHTML: footer, MarginMM: &exportclient.Margins{Bottom: new(15.0)}}})
	if st.State != "completed" {
		t.Fatalf("export: %s %s", st.State, st.Error)
	}
	path := e.artifact(st)
	nav := readNav(t, path)
	total := nav.pages
	if total < 4 {
		t.Fatalf("%d pages: want the contents, the intro and a guide of several pages", total)
	}
	chapterOf := func(page int) string {
		name := "Contents"
		for _, o := range nav.outline {
			if o.page <= page {
				name = o.title
			}
		}
		return name
	}
	for page := 1; page <= total; page++ {
		want := fmt.Sprintf("PAGE %d OF %d IN %s", page, total, chapterOf(page))
		if text := strings.Join(strings.Fields(pageText(t, path, page)), " "); !strings.Contains(text, want) {
			t.Errorf("page %d does not show %q:\n%s", page, want, text)
		}
	}
	// The same chapters with another footer are reused, not printed again.
	again := e.export(t, exportclient.Request{ManualID: "footed", Version: "1", Chapters: chapters,
		Options: exportclient.Options{Outline: true, FooterHTML: "<span class=pageNumber></span>", MarginMM: &exportclient.Margins{Bottom: new(15.0)}}})
	if again.State != "completed" || *again.Result.Chapters != (exportclient.ChapterCounts{Total: 2, Reused: 2}) {
		t.Fatalf("another footer: %s %s %+v", again.State, again.Error, again.Result)
	}
}

// TestManual_DocumentOptionsApplyOnceToTheManual: metadata and a watermark
// are written into the assembled manual (every page, the outline kept),
// and the chapters stay as printed, shared with manuals without them.
func TestManual_DocumentOptionsApplyOnceToTheManual(t *testing.T) {
	site := startChapterSite(t)
	e := startManualEnv(t, site, 2, 2)
	chapters := []exportclient.Chapter{{URL: site.url("intro.html"), Revision: "r1"}, {URL: site.url("guide.html"), Revision: "r1"}}
	st := e.export(t, exportclient.Request{ManualID: "marked", Version: "1", Chapters: chapters, Options: exportclient.Options{Outline: true,
		Metadata: &exportclient.Metadata{Title: "The Marked Manual"}, Watermark: &exportclient.Watermark{Text: "INTERNAL DRAFT"}}})
	if st.State != "completed" {
		t.Fatalf("export: %s %s", st.State, st.Error)
	}
	path := e.artifact(st)
	if info, err := (pdfcheck.Poppler{Path: path}).Info(t.Context()); err != nil || info["Title"] != "The Marked Manual" {
		t.Fatalf("pdfinfo: %v %v", err, info)
	}
	nav := readNav(t, path)
	if len(nav.outline) != 2 {
		t.Fatalf("outline %+v: want an entry per chapter after post-processing", nav.outline)
	}
	// A rotated watermark's letters come out of pdftotext on lines of
	// their own: compare without white space.
	squeeze := func(path string, page int) string {
		n := strconv.Itoa(page)
		out, err := exec.Command("pdftotext", "-raw", "-f", n, "-l", n, path, "-").Output()
		if err != nil {
			t.Fatalf("pdftotext: %v", err)
		}
		return strings.Join(strings.Fields(string(out)), "")
	}
	for page := 1; page <= nav.pages; page++ {
		if !strings.Contains(squeeze(path, page), "INTERNALDRAFT") {
			t.Errorf("page %d has no watermark", page)
		}
	}
	plain := e.export(t, exportclient.Request{ManualID: "plain", Version: "1", Chapters: chapters, Options: exportclient.Options{Outline: true}})
	if plain.State != "completed" || *plain.Result.Chapters != (exportclient.ChapterCounts{Total: 2, Reused: 2}) {
		t.Fatalf("the same chapters without document options: %s %s %+v", plain.State, plain.Error, plain.Result)
	}
	if text := squeeze(e.artifact(plain), 1); strings.Contains(text, "INTERNALDRAFT") {
		t.Fatal("the watermark reached the shared chapters")
	}
}

// TestManual_PageLimitAppliesToTheWholeManual: chapters each under
// RENDER_MAX_PAGES that add up to more fail the manual for good, naming
// the limit, and store no manual.
func TestManual_PageLimitAppliesToTheWholeManual(t *testing.T) {
	site := startChapterSite(t)
	e := startManualEnvWith(t, site, 2, 2, func(c *export.Config) { c.MaxPages = 4 })
	st := e.export(t, exportclient.Request{ManualID: "long", Version: "1", Chapters: []exportclient.Chapter{
		{URL: site.url("intro.html"), Revision: "r1"}, {URL: site.url("guide.html"), Revision: "r1"}, {URL: site.url("reference.html"), Revision: "r1"}}})
	if st.State != "failed" || !strings.Contains(st.Error, "RENDER_MAX_PAGES (4)") || st.Retried != 0 {
		t.Fatalf("state %s, retried %d, error %q: want failed for good naming RENDER_MAX_PAGES", st.State, st.Retried, st.Error)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "long")); !os.IsNotExist(err) {
		t.Fatalf("a manual over the limit was stored: %v", err)
	}
}

// statCounter counts the storage look-ups of each key (instrumentation
// around the real file store).
type statCounter struct {
	export.Store
	mu    sync.Mutex
	stats map[string]int
}

func (s *statCounter) Stat(ctx context.Context, key string) (storage.Object, error) {
	s.mu.Lock()
	s.stats[key]++
	s.mu.Unlock()
	return s.Store.Stat(ctx, key)
}

func (s *statCounter) count(suffix string) (keys, lookups int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range s.stats {
		if strings.HasPrefix(k, "_chapters/") && strings.HasSuffix(k, suffix) {
			keys++
			lookups += n
		}
	}
	return keys, lookups
}

// queuedChapters takes a manual's chapter tasks and drops them: the
// manual's own task prints what is missing (the fleet's side is
// internal/worker's test with real queues).
type queuedChapters struct{ n atomic.Int64 }

func (q *queuedChapters) EnqueueChapters(_ context.Context, _ string, tasks []spec.ChapterTask) error {
	q.n.Add(int64(len(tasks)))
	return nil
}

// TestManual_StoredChaptersLookedUpOnce: a manual whose chapters are all
// stored asks storage about each chapter once (the look-up that decides
// what to queue for the fleet serves the chapter's reuse too; on S3 each
// is a HEAD), and queues none of them.
func TestManual_StoredChaptersLookedUpOnce(t *testing.T) {
	site := startChapterSite(t)
	var counter *statCounter
	queued := &queuedChapters{}
	e := startManualEnvWith(t, site, 2, 2, func(c *export.Config) {
		counter = &statCounter{Store: c.Store, stats: map[string]int{}}
		c.Store, c.ChapterTasks = counter, queued
	})
	req := func(version string) exportclient.Request {
		return exportclient.Request{ManualID: "lookups", Version: version, Chapters: []exportclient.Chapter{
			{URL: site.url("intro.html"), Revision: "r1"},
			{URL: site.url("guide.html"), Revision: "r1"},
			{URL: site.url("reference.html"), Revision: "r1"},
		}}
	}
	if st := e.export(t, req("1")); st.State != "completed" {
		t.Fatalf("first version: %s %s", st.State, st.Error)
	}
	if got := queued.n.Load(); got != 3 {
		t.Fatalf("first version queued %d chapters for the fleet, want 3", got)
	}
	counter.mu.Lock()
	clear(counter.stats)
	counter.mu.Unlock()
	st := e.export(t, req("2"))
	if st.State != "completed" || st.Result.Chapters == nil || st.Result.Chapters.Reused != 3 {
		t.Fatalf("next version: %s %s %+v", st.State, st.Error, st.Result)
	}
	if keys, lookups := counter.count(".pdf"); keys != 3 || lookups != 3 {
		t.Errorf("the stored chapters' PDFs were looked up %d times over %d keys, want once each over 3", lookups, keys)
	}
	if got := queued.n.Load(); got != 3 {
		t.Errorf("stored chapters were queued for the fleet: %d tasks in all, want 3", got)
	}
}

// TestManual_ChaptersOfOneExportShareItsCache: the chapters of one manual
// export render in one browser context on the headless shell (a render
// session), so the stylesheet they all load is fetched once per export;
// another export starts a session of its own and fetches it again.
func TestManual_ChaptersOfOneExportShareItsCache(t *testing.T) {
	if !strings.Contains(testsupport.ChromiumPath(t), "headless-shell") {
		t.Skip("render sessions are the headless shell's")
	}
	var css atomic.Int64
	site := &chapterSite{hits: map[string]*atomic.Int64{}}
	site.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/docs/manual.css" {
			css.Add(1)
			w.Header().Set("Content-Type", "text/css")
			w.Header().Set("Cache-Control", "public, max-age=3600")
			fmt.Fprint(w, "h1 { color: #336; }")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><link rel=stylesheet href="/docs/manual.css"><h1>Chapter %s</h1><script>document.body.append("SCRIPT-RAN")</script>`, strings.TrimPrefix(r.URL.Path, "/docs/"))
	}))
	t.Cleanup(site.srv.Close)
	e := startManualEnv(t, site, 2, 1)
	manual := func(id string) exportclient.Request {
		var chapters []exportclient.Chapter
		for i := range 4 {
			chapters = append(chapters, exportclient.Chapter{URL: site.url(fmt.Sprintf("ch%d", i))})
		}
		// URL chapters without a revision: printed again for each version.
		return exportclient.Request{ManualID: "m", Version: id, Chapters: chapters}
	}
	for i, c := range []struct {
		id      string
		wantCSS int64
	}{
		{"first", 1},
		{"second", 2}, // its own session
	} {
		st := e.export(t, manual(c.id))
		if st.State != "completed" {
			t.Fatalf("export %s: %s %s", c.id, st.State, st.Error)
		}
		for ch := range 4 {
			if text := pageText(t, e.artifact(st), ch+1); !strings.Contains(text, fmt.Sprintf("Chapter ch%d", ch)) || !strings.Contains(text, "SCRIPT-RAN") {
				t.Errorf("export %d, page %d:\n%s", i+1, ch+1, text)
			}
		}
		if got := css.Load(); got != c.wantCSS {
			t.Errorf("after export %q the stylesheet was fetched %d times, want %d", c.id, got, c.wantCSS)
		}
	}
}

// TestManual_UntaggedOutlineIsChromiums: the chapters of an untagged
// manual print untagged with heading marks, and the outline the assembly
// builds from the marks is the one Chromium builds from its tagged
// structure for a tagged manual of the same real pages (Debian's Node.js
// docs): the same titles, nesting and pages, but where Chromium's says a
// heading twice.
func TestManual_UntaggedOutlineIsChromiums(t *testing.T) {
	const nodeDocs = "/usr/share/doc/nodejs/api"
	site := &chapterSite{hits: map[string]*atomic.Int64{}}
	site.srv = httptest.NewServer(http.StripPrefix("/docs/", http.FileServer(http.Dir(nodeDocs))))
	t.Cleanup(site.srv.Close)
	e := startManualEnv(t, site, 2, 2)
	chapters := []exportclient.Chapter{{URL: site.url("dns.html"), Revision: "r1"}, {URL: site.url("assert.html"), Revision: "r1"}}
	untagged := e.export(t, exportclient.Request{ManualID: "node", Version: "1", Chapters: chapters, Options: exportclient.Options{Outline: true}})
	if untagged.State != "completed" {
		t.Fatalf("untagged manual: %s %s", untagged.State, untagged.Error)
	}
	stored, err := filepath.Glob(filepath.Join(e.dir, "_chapters", "*.pdf"))
	if err != nil || len(stored) != 2 {
		t.Fatalf("%d chapters stored (%v), want 2", len(stored), err)
	}
	for _, p := range stored {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("/StructTreeRoot")) || bytes.Contains(raw, []byte("/Outlines")) {
			t.Errorf("chapter %s of an untagged manual was printed tagged or with Chromium's outline", filepath.Base(p))
		}
	}
	tagged := e.export(t, exportclient.Request{ManualID: "node", Version: "1", Chapters: chapters, Options: exportclient.Options{Outline: true, Tagged: true}})
	if tagged.State != "completed" {
		t.Fatalf("tagged manual: %s %s", tagged.State, tagged.Error)
	}
	ours, chromiums := readNav(t, e.artifact(untagged)), readNav(t, e.artifact(tagged))
	if ours.pages != chromiums.pages {
		t.Fatalf("%d pages untagged, %d tagged", ours.pages, chromiums.pages)
	}
	type entry struct {
		depth, page int
		title       string
	}
	var flat func(depth int, es []navEntry, out *[]entry)
	flat = func(depth int, es []navEntry, out *[]entry) {
		for _, x := range es {
			*out = append(*out, entry{depth, x.page, x.title})
			flat(depth+1, x.kids, out)
		}
	}
	var got, want []entry
	flat(0, ours.outline, &got)
	flat(0, chromiums.outline, &want)
	if len(want) < 40 || len(got) != len(want) {
		t.Fatalf("%d outline entries from the heading marks, %d of Chromium's (the test needs the pages' headings)", len(got), len(want))
	}
	split := 0
	for i, g := range got {
		w := want[i]
		if g == w {
			continue
		}
		// A heading whose box Chromium starts at the foot of a page and
		// whose text it prints on the next: its tagged structure holds the
		// text twice, so its outline entry says it twice and points at
		// the box's page, where the mark is on the page the text is
		// printed on (which the check of the page's text pins; the title
		// wraps there, so its first word).
		first, _, _ := strings.Cut(g.title, " ")
		if g.depth == w.depth && w.title == g.title+g.title && (w.page == g.page || w.page == g.page-1) &&
			strings.Contains(pageText(t, e.artifact(untagged), g.page), first) {
			split++
			continue
		}
		t.Errorf("outline entry %d: from the heading marks %+v, Chromium's %+v", i, g, w)
	}
	if split > len(want)/10 {
		t.Errorf("%d of %d entries differ from Chromium's as a heading across a page break would", split, len(want))
	}
	for _, l := range ours.links {
		if strings.HasPrefix(l.uri, "https://anchor.") {
			t.Errorf("page %d kept a mark %s", l.onPage, l.uri)
		}
	}
}
