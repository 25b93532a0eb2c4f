package main

import (
	"context"
	"fmt"
	stdnet "net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"

	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// nodeDocs is where Debian's nodejs package installs the Node.js API
// documentation: 64 module pages linking each other, and all.html, the
// same content as one page.
const nodeDocs = "/usr/share/doc/nodejs/api"

// manualResult is section M: a whole manual.
type manualResult struct {
	chapters  int
	measured  []manualRow
	breakdown *stepBreakdown   // the Node.js docs' first export, traced
	short     *shortManual     // a Sphinx manual of short chapters
	site      []manualRow      // the same docs by source.site: first, one page changed, unchanged
	rounds    []nodeRound      // the rows the targets judge, in rounds (nodeRoundsN)
	gotenberg *gotenbergManual // with -gotenberg: the real Gotenberg's rows
}

type manualRow struct {
	label       string
	cpu, wallMS float64
	pages       int
	outline     int // outline entries
	webLinks    int // links to a chapter's URL left pointing at the web server
	heapMiB     float64
	note        string
	discoveryMS float64 // source.site: the discovery's share of the wall
}

// scenarioManual (M): the Node.js API documentation as one PDF, on one
// in-process worker with real Chromium, against what a user would do
// instead, in the same run: the pipeline printing all.html as one page,
// and a peer's bare design printing the 64 pages two at a time in tabs of
// one shared browser and merging them with pdfcpu (Gotenberg's per-page
// conversion and merge route). Then the re-export of the next version
// with one chapter's revision changed.
func scenarioManual(ctx context.Context, e *benchEnv, rep *report) error {
	pages, err := nodeChapterPages()
	if err != nil {
		return err
	}
	ln, err := (&stdnet.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// /site/ serves a copy of the docs, which the source.site rows change
	// a page of.
	siteDocs, err := copyNodeDocs(e.work)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(nodeDocs)))
	mux.Handle("/site/", http.StripPrefix("/site", http.FileServer(http.Dir(siteDocs))))
	mux.Handle("/py/", http.StripPrefix("/py", http.FileServer(http.Dir(pythonDocs))))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/"
	m := &manualBench{ctx: ctx, e: e, host: ln.Addr().String(), base: base, pages: pages, siteDocs: siteDocs,
		linkBase: base, navPages: pages, res: &manualResult{chapters: len(pages)}}
	stop, err := m.startFleet("manual", 1)
	if err != nil {
		return err
	}
	defer stop()
	rep.manual = m.res

	warm := exportclient.Request{ManualID: "warm", Version: freshVersion("w"), URL: base + "documentation.html"}
	if _, _, err := m.measure("warm-up", warm); err != nil {
		return err
	}
	manuals := strings.Split(e.o.manuals, ",")
	if slices.Contains(manuals, "python") {
		m.linkBase = base + "py/tutorial/"
		if m.res.short, err = runShortManual(ctx, e, m.linkBase, m.measure, func(p []string) { m.navPages = p }); err != nil {
			return err
		}
		m.linkBase, m.navPages = base, pages
	}
	if !slices.Contains(manuals, "node") {
		return nil
	}
	if err := m.nodeOnOneWorker(); err != nil {
		return err
	}
	// Two workers of one fleet (two Chromiums), a fresh revision of every
	// chapter so that all of them print again, spread over both.
	stop()
	stop2, err := m.startFleet("manual-2", 2)
	if err != nil {
		return err
	}
	defer stop2()
	if _, _, err := m.measure("warm-up", exportclient.Request{ManualID: "warm", Version: freshVersion("w2"), URL: base + "documentation.html"}); err != nil {
		return err
	}
	_, err = m.chapters("↳ the same on 2 workers", "20.2", freshVersion("m2"), "")
	return err
}

// manualBench is one run of scenario M: the docs' server, the fleet and
// client of the moment, and what measure reads links against.
type manualBench struct {
	ctx        context.Context
	e          *benchEnv
	host, base string   // the docs' server
	pages      []string // the Node.js docs' chapter pages
	siteDocs   string   // the copy of the docs served under /site/
	f          *fleet
	client     *exportclient.Client
	linkBase   string   // what a link to a chapter starts with
	navPages   []string // the chapters pdfNavigation looks for
	res        *manualResult
}

// startFleet starts n in-process workers and a client of theirs, which
// measure uses from then on; stop stops both (once).
func (m *manualBench) startFleet(name string, n int) (stop func(), err error) {
	f, err := startInProcFleet(m.ctx, m.e, name, n, workerSpec{extraEnv: []string{"ALLOWED_HOSTS=" + m.host, "TASK_TIMEOUT=10m", "RENDER_TIMEOUT=5m"}})
	if err != nil {
		return nil, err
	}
	client, err := exportclient.New(exportclient.Config{Redis: f.queueOpt, AllowedHosts: m.host, Timeout: 10 * time.Minute})
	if err != nil {
		f.stop()
		return nil, err
	}
	m.f, m.client = f, client
	var once sync.Once
	return func() { once.Do(func() { client.Close(); f.stop() }) }, nil
}

// measure exports r and reads its row: wall, the process tree's CPU, the
// Go heap's peak, and the PDF's pages, outline and links left to the web.
func (m *manualBench) measure(label string, r exportclient.Request) (exportclient.Status, manualRow, error) {
	runtime.GC()
	heap0 := heapBytes()
	stopHeap := sampleHeap()
	meter := startTreeMeter(os.Getpid(), treeMeterEvery)
	t0 := time.Now()
	job, err := m.client.Enqueue(m.ctx, r)
	if err != nil {
		stopHeap()
		meter.seconds()
		return exportclient.Status{}, manualRow{}, err
	}
	st, err := m.client.Wait(m.ctx, job.TaskID, 20*time.Millisecond)
	wall := time.Since(t0)
	peak := stopHeap()
	time.Sleep(docSettle)
	cpu := meter.seconds()
	if err != nil {
		return st, manualRow{}, err
	}
	if st.State != exportclient.StateCompleted || st.Result == nil {
		return st, manualRow{}, fmt.Errorf("%s: %s %s: %w", label, st.State, st.Error, errScenario)
	}
	row := manualRow{label: label, cpu: cpu, wallMS: msOf(wall), pages: st.Result.Pages,
		heapMiB: float64(max(peak, heap0)-heap0) / (1 << 20)}
	path := filepath.Join(m.f.dir, "artifacts", filepath.FromSlash(st.Result.ArtifactKey))
	row.outline, row.webLinks, err = pdfNavigation(path, m.linkBase, m.navPages)
	if s := st.Result.Site; s != nil {
		row.discoveryMS = float64(s.DiscoveryMS)
		row.note = fmt.Sprintf("%s; discovery %d ms, %d requests", chapterNote(st), s.DiscoveryMS, s.Requests)
	}
	return st, row, err
}

// chapters measures the Node.js docs as one manual of chapters at
// version, every chapter at revision chapterVersion but revised, and adds
// the row to the measured ones.
func (m *manualBench) chapters(label, version, chapterVersion, revised string) (manualRow, error) {
	st, row, err := m.measure(label, exportclient.Request{ManualID: "node", Version: version,
		Chapters: chapterList(m.base, m.pages, chapterVersion, revised), Options: exportclient.Options{Outline: true, TOC: true}})
	if err != nil {
		return row, err
	}
	row.note = chapterNote(st)
	m.res.measured = append(m.res.measured, row)
	logf("   %s: %.1f s, CPU %.1f s, %d pages, %s", row.label, row.wallMS/1000, row.cpu, row.pages, row.note)
	return row, nil
}

// nodeOnOneWorker measures the Node.js docs on the first fleet: all.html,
// the chapters and their next version, the site's three releases, the
// peer, Gotenberg, the traced export and the judged rounds.
func (m *manualBench) nodeOnOneWorker() error {
	res, base := m.res, m.base
	_, one, err := m.measure("pipeline, all.html as one page", exportclient.Request{ManualID: "node-all", Version: freshVersion("a"),
		URL: base + "all.html", Options: exportclient.Options{Outline: true}})
	if err != nil {
		return err
	}
	res.measured = append(res.measured, one)
	logf("   %s: %.1f s, CPU %.1f s, %d pages", one.label, one.wallMS/1000, one.cpu, one.pages)
	version := freshVersion("m")
	whole, err := m.chapters(fmt.Sprintf("pipeline, the %d pages as one manual (chapters)", len(m.pages)), "20", version, "")
	if err != nil {
		return err
	}
	if _, err := m.chapters("↳ next version, one chapter revised", "20.1", version, "fs.html"); err != nil {
		return err
	}
	if err := m.siteReleases(); err != nil {
		return err
	}
	peerRow, err := peerManual(m.ctx, m.e, base, m.pages)
	if err != nil {
		return err
	}
	res.measured = append(res.measured, peerRow)
	logf("   %s: %.1f s, CPU %.1f s, %d pages", peerRow.label, peerRow.wallMS/1000, peerRow.cpu, peerRow.pages)
	if res.gotenberg, err = runGotenbergManual(m.ctx, m.e, base, m.pages); err != nil {
		return err
	}
	nodeReq := exportclient.Request{ManualID: "node-traced", Version: "20", Chapters: chapterList(base, m.pages, freshVersion("t"), ""),
		Options: exportclient.Options{Outline: true, TOC: true}}
	if res.breakdown, err = traceSteps("Node.js docs, first export", func() error { _, _, err := m.measure("traced", nodeReq); return err }); err != nil {
		return err
	}
	res.breakdown.log()
	return nodeRounds(m.ctx, m.e, res, whole, base, m.pages, m.measure, func(b string) { m.linkBase = b })
}

// siteReleases measures the same docs straight from the site: the
// chapters from index.html's navigation, revisions from their content;
// then the next release with one page changed, then that release again
// unchanged.
func (m *manualBench) siteReleases() error {
	m.linkBase = m.base + "site/"
	defer func() { m.linkBase = m.base }()
	for _, step := range []struct {
		label, version string
		before         func() error
	}{
		{"pipeline, --site: the chapters from index.html's navigation", "20", nil},
		{"↳ next release, one page changed", "20.1", func() error { return touchPage(filepath.Join(m.siteDocs, "fs.html")) }},
		{"↳ the same release again, nothing changed", "20.2", nil},
	} {
		if step.before != nil {
			if err := step.before(); err != nil {
				return err
			}
		}
		_, row, err := m.measure(step.label, exportclient.Request{ManualID: "node-site", Version: step.version,
			Site: &exportclient.Site{URL: m.base + "site/index.html"}, Options: exportclient.Options{Outline: true, TOC: true}})
		if err != nil {
			return err
		}
		m.res.site = append(m.res.site, row)
		logf("   %s: %.1f s, CPU %.1f s, %d pages, %s", row.label, row.wallMS/1000, row.cpu, row.pages, row.note)
	}
	return nil
}

// nodeRoundsN is how many rounds the rows that section M's targets judge
// run on the Node.js docs: one export of them moves by about 15 % from
// one run to the next.
const nodeRoundsN = 3

// nodeRound is one round of those rows: the first export from chapters,
// the first --site export, and Gotenberg's (b) and (c) (none without
// -gotenberg), every chapter printed anew.
type nodeRound struct {
	first, site manualRow
	gotenberg   []manualRow
}

// nodeRounds completes res.rounds: the first round from what the section
// measured already (whole, the first --site export, Gotenberg's rows),
// then the others. setLinkBase tells measure where the chapters' links
// point.
func nodeRounds(ctx context.Context, e *benchEnv, res *manualResult, whole manualRow, base string, pages []string, measure measureFunc, setLinkBase func(string)) error {
	if len(res.site) == 0 {
		return nil
	}
	first := nodeRound{first: whole, site: res.site[0]}
	if res.gotenberg != nil && len(res.gotenberg.rows) >= 3 {
		first.gotenberg = res.gotenberg.rows[1:]
	}
	res.rounds = []nodeRound{first}
	opts := exportclient.Options{Outline: true, TOC: true}
	for round := 2; round <= nodeRoundsN; round++ {
		var r nodeRound
		setLinkBase(base)
		st, row, err := measure(fmt.Sprintf("pipeline, chapters, round %d", round), exportclient.Request{ManualID: "node", Version: "20",
			Chapters: chapterList(base, pages, freshVersion(fmt.Sprintf("r%d", round)), ""), Options: opts})
		if err != nil {
			return err
		}
		row.note = chapterNote(st)
		r.first = row
		setLinkBase(base + "site/")
		st, row, err = measure(fmt.Sprintf("pipeline, --site, round %d", round), exportclient.Request{ManualID: "node-site", Version: "20",
			Site: &exportclient.Site{URL: base + "site/index.html", Revision: freshVersion(fmt.Sprintf("s%d", round))}, Options: opts})
		setLinkBase(base)
		if err != nil {
			return err
		}
		if row.note == "" {
			row.note = chapterNote(st)
		}
		r.site = row
		logf("   round %d: chapters %.1f s, CPU %.1f s; --site %.1f s, CPU %.1f s", round, r.first.wallMS/1000, r.first.cpu, r.site.wallMS/1000, r.site.cpu)
		if res.gotenberg != nil {
			g, err := gotenbergManualRows(ctx, e, base, base+"documentation.html", pages, false)
			if err != nil {
				return err
			}
			if g != nil {
				r.gotenberg = g.rows
			}
		}
		res.rounds = append(res.rounds, r)
	}
	return nil
}

// judged are the rows section M's targets judge: the medians over
// m.rounds of the first export, the first --site export and, per round,
// the faster of Gotenberg's (b) and (c) (best is the zero row without
// -gotenberg), what they are medians of ("" for one round), and the
// ratios the targets judge. Without rounds (no --site rows) they are this
// run's: whole and Gotenberg's rows.
func (m *manualResult) judged(whole manualRow) (first, site, best manualRow, j judgedRatios, rounds string) {
	if len(m.rounds) == 0 {
		if len(m.site) > 0 {
			site = m.site[0]
		}
		if m.gotenberg != nil && len(m.gotenberg.rows) >= 3 {
			best = fasterRow(m.gotenberg.rows[1:])
		}
		return whole, site, best, ratiosOf([]nodeRound{{first: whole, site: site, gotenberg: []manualRow{best}}}), ""
	}
	if len(m.rounds) > 1 {
		rounds = fmt.Sprintf(" (median of %d rounds)", len(m.rounds))
	}
	var firsts, sites, bests []manualRow
	for _, r := range m.rounds {
		firsts, sites = append(firsts, r.first), append(sites, r.site)
		if len(r.gotenberg) > 0 {
			bests = append(bests, fasterRow(r.gotenberg))
		}
	}
	first, site = medianRow(firsts), medianRow(sites)
	if len(bests) == len(m.rounds) {
		best = medianRow(bests)
		j = ratiosOf(m.rounds)
	}
	return first, site, best, j, rounds
}

// judgedRatios are the ratios section M's targets judge: the pipeline's
// first export from chapters and its first --site export against the
// faster Gotenberg, on wall and CPU.
type judgedRatios struct {
	firstWall, firstCPU, siteWall, siteCPU float64
}

// ratiosOf are the medians over rounds of each round's ratios, its rows
// against the faster Gotenberg of the same round: the machine's speed
// drifts by 15–25 % over minutes (the same export's CPU-seconds with it),
// and a round's rows are measured one right after another, so their
// ratio keeps what the code does and a ratio of the rounds' medians, rows
// measured minutes apart, does not. Every round needs its Gotenberg rows.
func ratiosOf(rounds []nodeRound) judgedRatios {
	var fw, fc, sw, sc []float64
	for _, r := range rounds {
		if len(r.gotenberg) == 0 {
			return judgedRatios{}
		}
		best := fasterRow(r.gotenberg)
		if best.wallMS == 0 || best.cpu == 0 {
			return judgedRatios{}
		}
		fw, fc = append(fw, r.first.wallMS/best.wallMS), append(fc, r.first.cpu/best.cpu)
		sw, sc = append(sw, r.site.wallMS/best.wallMS), append(sc, r.site.cpu/best.cpu)
	}
	return judgedRatios{median(fw), median(fc), median(sw), median(sc)}
}

// roundsMarkdown is the table of the rounds of the rows the targets judge.
func (m *manualResult) roundsMarkdown() string {
	if len(m.rounds) < 2 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe rows the targets judge, in %d rounds (the first is the rows above; in the others every chapter prints anew, "+
		"the --site export with a fresh `revision`, so that its discovery reads the navigation alone, about 0.2 s less than the first round's; "+
		"in each, Gotenberg (c) right after the pipeline's rows). The summary shows the median of each row, and judges the median of each round's "+
		"ratios to its faster Gotenberg (the ratio column), which the machine's drift over minutes moves less.\n\n", len(m.rounds))
	b.WriteString("| round | what | wall s | CPU-s | pages | ratio to the faster Gotenberg (wall · CPU) | |\n|---|---|---|---|---|---|---|\n")
	for k, r := range m.rounds {
		var best manualRow
		if len(r.gotenberg) > 0 {
			best = fasterRow(r.gotenberg)
		}
		for i, row := range append([]manualRow{r.first, r.site}, r.gotenberg...) {
			against := ""
			if i < 2 && best.wallMS > 0 && best.cpu > 0 {
				against = fmt.Sprintf("%.2f× · %.2f×", row.wallMS/best.wallMS, row.cpu/best.cpu)
			}
			fmt.Fprintf(&b, "| %d | %s | %.1f | %.1f | %d | %s | %s |\n", k+1, row.label, row.wallMS/1000, row.cpu, row.pages, against, row.note)
		}
	}
	return b.String()
}

// copyNodeDocs copies the Node.js docs' pages and assets into a new
// directory under work.
func copyNodeDocs(work string) (string, error) {
	dir, err := os.MkdirTemp(work, "node-site-")
	if err != nil {
		return "", err
	}
	if out, err := exec.Command("sh", "-c", `cp -r "$1"/*.html "$1"/assets "$2"/`, "sh", nodeDocs, dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copying %s: %v: %s", nodeDocs, err, out)
	}
	return dir, nil
}

// chapterList is pages at base as chapters of revision version, the page
// named revised (if any) at a revision of its own.
func chapterList(base string, pages []string, version, revised string) []exportclient.Chapter {
	cs := make([]exportclient.Chapter, len(pages))
	for i, p := range pages {
		cs[i] = exportclient.Chapter{URL: base + p, Revision: version}
		if p == revised {
			cs[i].Revision = version + "-revised"
		}
	}
	return cs
}

// touchPage changes a page's content as a new release of the docs would.
func touchPage(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	changed := strings.Replace(string(b), "</body>", "<p>Changed in the next release.</p></body>", 1)
	return os.WriteFile(path, []byte(changed), 0o644)
}

func chapterNote(st exportclient.Status) string {
	if c := st.Result.Chapters; c != nil {
		return fmt.Sprintf("%d chapters rendered, %d reused", c.Rendered, c.Reused)
	}
	return ""
}

// nodeChapterPages lists the module pages of the Node.js docs (all.html
// and index.html aside), sorted.
func nodeChapterPages() ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(nodeDocs, "*.html"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no Node.js documentation in %s (Debian's nodejs package installs it; make setup does): %w", nodeDocs, errScenario)
	}
	var pages []string
	for _, p := range paths {
		name := filepath.Base(p)
		if name != "all.html" && name != "index.html" {
			pages = append(pages, name)
		}
	}
	sort.Strings(pages)
	return pages, nil
}

// peerManual is the peer's bare design: every page printed in a tab of
// one shared browser, two at a time, then merged with pdfcpu.
func peerManual(ctx context.Context, e *benchEnv, base string, pages []string) (manualRow, error) {
	path, err := chromium.Find()
	if err != nil {
		return manualRow{}, err
	}
	row := manualRow{label: "peer: a tab per page, 2 at a time, then pdfcpu merge"}
	dir, err := os.MkdirTemp(e.work, "peer-manual-")
	if err != nil {
		return row, err
	}
	runtime.GC()
	heap0 := heapBytes()
	stopHeap := sampleHeap()
	meter := startTreeMeter(os.Getpid(), treeMeterEvery)
	defer meter.seconds()
	t0 := time.Now()
	b, err := peer.Start(ctx, path)
	if err != nil {
		stopHeap()
		return row, err
	}
	params := render.PrintParams(spec.Options{Outline: true}.Settings()) // as the chapters print
	files := make([]string, len(pages))
	errs := make([]error, len(pages))
	next := make(chan int)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				files[i] = filepath.Join(dir, fmt.Sprintf("%03d.pdf", i))
				out, err := os.Create(files[i])
				if err != nil {
					errs[i] = err
					continue
				}
				_, errs[i] = b.PrintURL(ctx, base+pages[i], nil, params, out)
				out.Close()
			}
		}()
	}
	for i := range pages {
		next <- i
	}
	close(next)
	wg.Wait()
	b.Close()
	for _, err := range errs {
		if err != nil {
			stopHeap()
			return row, err
		}
	}
	merged := filepath.Join(dir, "merged.pdf")
	err = api.MergeCreateFile(files, merged, false, nil)
	row.wallMS = msOf(time.Since(t0))
	peak := stopHeap()
	time.Sleep(docSettle)
	row.cpu = meter.now()
	if err != nil {
		return row, fmt.Errorf("pdfcpu merge: %w", err)
	}
	row.heapMiB = float64(max(peak, heap0)-heap0) / (1 << 20)
	if row.pages, err = harness.PDFPages(merged); err != nil {
		return row, err
	}
	row.outline, row.webLinks, err = pdfNavigation(merged, base, pages)
	return row, err
}

// pdfNavigation counts a PDF's outline entries (qpdf) and its links still
// pointing at one of the chapters on the web server.
func pdfNavigation(path, base string, pages []string) (outline, webLinks int, err error) {
	raw, err := exec.Command("qpdf", "--json=2", "--json-key=outlines", "--json-key=qpdf", path).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("qpdf --json %s: %w", path, err)
	}
	out := string(raw)
	outline = strings.Count(out, `"destpageposfrom1"`)
	for _, p := range pages {
		webLinks += strings.Count(out, `"u:`+base+p)
	}
	return outline, webLinks, nil
}

func (m *manualResult) rows() []row {
	if m == nil {
		return nil
	}
	if len(m.measured) < 4 {
		return m.short.rows()
	}
	one, whole, again, peerRow := m.measured[0], m.measured[1], m.measured[2], m.measured[3]
	ratio := func(a, b float64) string { return fmt.Sprintf("%.2f×", a/b) }
	var two []row
	if len(m.measured) > 4 {
		t := m.measured[4]
		two = []row{{"M", "↳ the same on 2 workers (" + t.note + ")", fmt.Sprintf("%.1f s · CPU %.1f s", t.wallMS/1000, t.cpu),
			"1 worker", ratio(t.wallMS, whole.wallMS), "—"}}
	}
	firstMed, siteMed, best, judged, rounds := m.judged(whole)
	two = append(append(m.gotenberg.summaryRows(firstMed, again, best, judged, rounds), m.short.rows()...), two...)
	if len(m.site) == 3 {
		first, changed, same := m.site[0], m.site[1], m.site[2]
		siteRows := []row{{"M", fmt.Sprintf("whole manual by --site: Node.js docs, chapters from the navigation → %d pages (%s)", first.pages, first.note),
			fmt.Sprintf("%.1f s · CPU %.1f s", first.wallMS/1000, first.cpu),
			fmt.Sprintf("peer per page + merge %.1f s · CPU %.1f s", peerRow.wallMS/1000, peerRow.cpu),
			ratio(first.wallMS, peerRow.wallMS), "≤ 0.5× wall " + verdict(first.wallMS <= 0.5*peerRow.wallMS)}}
		siteRows = append(siteRows, m.gotenberg.siteRows(siteMed, best, judged, rounds)...)
		siteRows = append(siteRows,
			row{"M", "↳ next release, one page changed (" + changed.note + ")", fmt.Sprintf("%.1f s · CPU %.1f s", changed.wallMS/1000, changed.cpu),
				fmt.Sprintf("peer per page + merge %.1f s", peerRow.wallMS/1000), ratio(changed.wallMS, peerRow.wallMS), "≤ 0.1× wall " + verdict(changed.wallMS <= 0.1*peerRow.wallMS)},
			row{"M", "↳ discovery of the first --site export", fmt.Sprintf("%.0f ms", first.discoveryMS),
				fmt.Sprintf("its export %.1f s", first.wallMS/1000), fmt.Sprintf("%.1f %%", 100*first.discoveryMS/first.wallMS), "≤ 5 % " + verdict(first.discoveryMS <= 0.05*first.wallMS)},
			row{"M", "↳ the same release again (" + same.note + ")", fmt.Sprintf("%.1f s · CPU %.1f s", same.wallMS/1000, same.cpu),
				"the first --site export", ratio(same.wallMS, first.wallMS), "—"})
		two = append(siteRows, two...)
	}
	return append([]row{
		{"M", fmt.Sprintf("whole manual: Node.js docs, %d chapters → %d pages, outline %d entries, %d links left to chapter URLs", m.chapters, whole.pages, whole.outline, whole.webLinks),
			fmt.Sprintf("%.1f s · CPU %.1f s", whole.wallMS/1000, whole.cpu),
			fmt.Sprintf("peer per page + merge %.1f s · CPU %.1f s (outline %d, %d links to chapter URLs)", peerRow.wallMS/1000, peerRow.cpu, peerRow.outline, peerRow.webLinks),
			ratio(whole.wallMS, peerRow.wallMS), "≤ 0.75× wall " + verdict(whole.wallMS <= 0.75*peerRow.wallMS)},
		{"M", "↳ against the pipeline on all.html (one page)", fmt.Sprintf("%.1f s · CPU %.1f s", whole.wallMS/1000, whole.cpu),
			fmt.Sprintf("%.1f s · CPU %.1f s, %d pages", one.wallMS/1000, one.cpu, one.pages), ratio(whole.wallMS, one.wallMS), "≤ 0.6× wall " + verdict(whole.wallMS <= 0.6*one.wallMS)},
		{"M", "↳ next version, one chapter revised (" + again.note + ")", fmt.Sprintf("%.1f s · CPU %.1f s", again.wallMS/1000, again.cpu),
			"the first export", ratio(again.wallMS, whole.wallMS), "≤ 0.15× wall " + verdict(again.wallMS <= 0.15*whole.wallMS)},
	}, two...)
}

func (m *manualResult) markdown() string {
	if len(m.measured) == 0 {
		return "\n## M. A whole manual from chapters\n" + m.short.markdown()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## M. A whole manual from chapters\n\n")
	fmt.Fprintf(&b, "The Node.js API documentation of Debian's nodejs package (%s): %d module pages that link each ", nodeDocs, m.chapters)
	fmt.Fprintf(&b, "other, and all.html, the same content as one page, served on loopback. One in-process worker ")
	fmt.Fprintf(&b, "(RENDER_CONCURRENCY 2) with real Chromium, and for the last row two workers of one fleet (two Chromiums ")
	fmt.Fprintf(&b, "on the same cores, every chapter revised so that all print again); one run each. CPU is the whole process tree's (worker, ")
	fmt.Fprintf(&b, "Chromium, redis-server), every process of it sampled every %s, so that a browser restarted or killed during a row keeps ", treeMeterEvery)
	fmt.Fprintf(&b, "the time it and its renderers used; heap is the peak of the Go heap above the idle heap. The peer prints each ")
	fmt.Fprintf(&b, "page in a tab of one shared browser, two at a time, and merges the files with pdfcpu, as ")
	fmt.Fprintf(&b, "Gotenberg's per-page conversion and merge route do. \"Links to chapter URLs\" are link annotations that ")
	fmt.Fprintf(&b, "still open a chapter on the web server instead of its page in the PDF.\n\n")
	fmt.Fprintf(&b, "| what | wall s | CPU-s | pages | outline entries | links to chapter URLs | peak heap MiB | |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range append(append([]manualRow(nil), m.measured...), m.site...) {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %d | %d | %d | %.0f | %s |\n", r.label, r.wallMS/1000, r.cpu, r.pages, r.outline, r.webLinks, r.heapMiB, r.note)
	}
	b.WriteString(m.gotenberg.tableRows())
	b.WriteString(m.gotenberg.prose())
	b.WriteString(m.roundsMarkdown())
	b.WriteString(m.short.markdown())
	return b.String()
}

// pythonDocs is where Debian's python3.11-doc package installs Python's
// documentation, a Sphinx build; its tutorial is section M's manual of
// short chapters.
const pythonDocs = "/usr/share/doc/python3.11/html"

// shortManual is section M's Sphinx manual of short chapters: the Python
// tutorial's 16 pages, the chapters its index's toctree lists, against
// the peer's bare design and the real Gotenberg converting each page and
// merging, in rounds (a manual this short takes seconds, and one run of
// it moves with the machine), each system once per round.
type shortManual struct {
	chapters  int
	rounds    []shortRound
	breakdown *stepBreakdown
}

type shortRound struct {
	first, revised, peer manualRow
	gotenberg            []manualRow // (b), (c); none without -gotenberg
}

// shortManualRounds is how many rounds section M's short manual runs.
const shortManualRounds = 3

type measureFunc func(label string, r exportclient.Request) (exportclient.Status, manualRow, error)

func runShortManual(ctx context.Context, e *benchEnv, base string, measure measureFunc, nav func([]string)) (*shortManual, error) {
	pages, err := tutorialPages()
	if err != nil {
		return nil, err
	}
	nav(pages)
	sm := &shortManual{chapters: len(pages)}
	req := func(v string, cs []exportclient.Chapter) exportclient.Request {
		return exportclient.Request{ManualID: "python-tutorial", Version: v, Chapters: cs, Options: exportclient.Options{Outline: true, TOC: true}}
	}
	if _, _, err := measure("warm-up", exportclient.Request{ManualID: "warm", Version: freshVersion("wp"), URL: base + "../index.html"}); err != nil {
		return nil, err
	}
	for round := 1; round <= shortManualRounds; round++ {
		version := freshVersion("py") // every chapter prints again
		chapters := func(revised string) []exportclient.Chapter { return chapterList(base, pages, version, revised) }
		var r shortRound
		st, first, err := measure(fmt.Sprintf("pipeline, the Python tutorial's %d pages as one manual (chapters)", len(pages)), req(version, chapters("")))
		if err != nil {
			return nil, err
		}
		first.note = chapterNote(st)
		r.first = first
		logf("   round %d: %s: %.1f s, CPU %.1f s, %d pages, %s", round, first.label, first.wallMS/1000, first.cpu, first.pages, first.note)
		st, again, err := measure("↳ next version, one chapter revised", req(version+".1", chapters("classes.html")))
		if err != nil {
			return nil, err
		}
		again.note = chapterNote(st)
		r.revised = again
		logf("   round %d: %s: %.1f s, CPU %.1f s, %s", round, again.label, again.wallMS/1000, again.cpu, again.note)
		if r.peer, err = peerManual(ctx, e, base, pages); err != nil {
			return nil, err
		}
		logf("   round %d: %s: %.1f s, CPU %.1f s, %d pages", round, r.peer.label, r.peer.wallMS/1000, r.peer.cpu, r.peer.pages)
		g, err := gotenbergManualRows(ctx, e, base, base+"../index.html", pages, false)
		if err != nil {
			return nil, err
		}
		if g != nil {
			r.gotenberg = g.rows
		}
		sm.rounds = append(sm.rounds, r)
	}
	version := freshVersion("pyt")
	sm.breakdown, err = traceSteps("Python tutorial, first export", func() error {
		_, _, err := measure("traced", req(version, chapterList(base, pages, version, "")))
		return err
	})
	if err != nil {
		return nil, err
	}
	sm.breakdown.log()
	return sm, nil
}

// tutorialPages are the pages the Python tutorial's index lists in its
// toctree, in order.
func tutorialPages() ([]string, error) {
	b, err := os.ReadFile(filepath.Join(pythonDocs, "tutorial", "index.html"))
	if err != nil {
		return nil, fmt.Errorf("no Python documentation in %s (Debian's python3.11-doc package installs it; make setup does): %w", pythonDocs, errScenario)
	}
	var pages []string
	seen := map[string]bool{}
	for _, m := range tutorialLink.FindAllStringSubmatch(string(b), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			pages = append(pages, m[1])
		}
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("no toctree entries in %s/tutorial/index.html: %w", pythonDocs, errScenario)
	}
	return pages, nil
}

var tutorialLink = regexp.MustCompile(`<li class="toctree-l1"><a class="reference internal" href="([a-z0-9]+\.html)">`)

// medianRow is the median wall and the median CPU of rows.
func medianRow(rows []manualRow) manualRow {
	var wall, cpu dist
	for _, r := range rows {
		wall, cpu = append(wall, r.wallMS), append(cpu, r.cpu)
	}
	out := rows[0]
	out.wallMS, out.cpu = wall.median(), cpu.median()
	return out
}

// fastestGotenberg is, per round, the faster of Gotenberg's (b) and (c):
// what a caller who wants the PDF soonest picks; nil without -gotenberg.
func (sm *shortManual) fastestGotenberg() []manualRow {
	var out []manualRow
	for _, r := range sm.rounds {
		if len(r.gotenberg) == 0 {
			return nil
		}
		out = append(out, fasterRow(r.gotenberg))
	}
	return out
}

func (sm *shortManual) rows() []row {
	if sm == nil || len(sm.rounds) == 0 {
		return nil
	}
	var firsts, revs, peers []manualRow
	for _, r := range sm.rounds {
		firsts, revs, peers = append(firsts, r.first), append(revs, r.revised), append(peers, r.peer)
	}
	f, r, p := medianRow(firsts), medianRow(revs), medianRow(peers)
	n := fmt.Sprintf(" (median of %d rounds)", len(sm.rounds))
	res := fmt.Sprintf("%.1f s · CPU %.1f s", f.wallMS/1000, f.cpu)
	rows := []row{
		{"M", fmt.Sprintf("whole manual: Python tutorial (Sphinx), %d short chapters → %d pages, outline %d entries, %d links left to chapter URLs%s", sm.chapters, f.pages, f.outline, f.webLinks, n),
			res, fmt.Sprintf("peer per page + merge %.1f s · CPU %.1f s (outline %d, %d links to chapter URLs)", p.wallMS/1000, p.cpu, p.outline, p.webLinks),
			fmt.Sprintf("wall %s · CPU %s", ratio(f.wallMS/p.wallMS), ratio(f.cpu/p.cpu)), "figures"},
	}
	if gs := sm.fastestGotenberg(); gs != nil {
		b := medianRow(gs)
		rows = append(rows,
			row{"M", "↳ against real Gotenberg, per round the faster of (b) and (c)" + n, res,
				fmt.Sprintf("%.1f s · CPU %.1f s, %d pages, outline %d, %d links to chapter URLs", b.wallMS/1000, b.cpu, b.pages, b.outline, b.webLinks),
				fmt.Sprintf("wall %s · CPU %s", ratio(f.wallMS/b.wallMS), ratio(f.cpu/b.cpu)), "≤ 0.75× wall and CPU " + verdict(f.wallMS <= 0.75*b.wallMS && f.cpu <= 0.75*b.cpu)},
			row{"M", "↳ next version, one chapter revised (" + r.note + "), against the same Gotenberg rows" + n, fmt.Sprintf("%.1f s · CPU %.1f s", r.wallMS/1000, r.cpu),
				fmt.Sprintf("%.1f s · CPU %.1f s", b.wallMS/1000, b.cpu),
				fmt.Sprintf("wall %s · CPU %s", ratio(r.wallMS/b.wallMS), ratio(r.cpu/b.cpu)), "≤ 0.15× wall and CPU " + verdict(r.wallMS <= 0.15*b.wallMS && r.cpu <= 0.15*b.cpu)})
	}
	return rows
}

func (sm *shortManual) markdown() string {
	if sm == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n### M, a Sphinx manual of short chapters\n\n")
	fmt.Fprintf(&b, "The Python tutorial of Debian's python3.11-doc package (%s/tutorial), a Sphinx build: the %d pages its index's ", pythonDocs, sm.chapters)
	b.WriteString("toctree lists, in order, as chapters with a contents page and outline, on the same worker, served on loopback with the rest of ")
	fmt.Fprintf(&b, "the documentation (its stylesheets, scripts and the pages its links name). The peer and Gotenberg print the same pages the same way as above; ")
	fmt.Fprintf(&b, "Gotenberg (c) merges without `titleBookmarks`, so its PDF has no outline. %d rounds, each system once per round, every chapter of every round printed anew.\n\n", len(sm.rounds))
	b.WriteString("| round | what | wall s | CPU-s | pages | outline entries | links to chapter URLs | peak heap MiB | |\n|---|---|---|---|---|---|---|---|---|\n")
	for k, rd := range sm.rounds {
		for _, r := range append([]manualRow{rd.first, rd.revised, rd.peer}, rd.gotenberg...) {
			heap := fmt.Sprintf("%.0f", r.heapMiB)
			if strings.HasPrefix(r.label, "Gotenberg") {
				heap = "—"
			}
			fmt.Fprintf(&b, "| %d | %s | %.1f | %.1f | %d | %d | %d | %s | %s |\n", k+1, r.label, r.wallMS/1000, r.cpu, r.pages, r.outline, r.webLinks, heap, r.note)
		}
	}
	return b.String()
}
