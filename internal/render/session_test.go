package render

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/assemble"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// chapterSite serves /chN, pages that run a script and load one cacheable
// stylesheet, as the chapters of a docs site do.
func chapterSite(t *testing.T) *site {
	return newSite(t, func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.URL.Path == "/style.css":
			w.Header().Set("Content-Type", "text/css")
			w.Header().Set("Cache-Control", "public, max-age=3600")
			fmt.Fprint(w, "h1 { color: #336; }")
		case strings.HasPrefix(req.URL.Path, "/ch"):
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><link rel=stylesheet href="/style.css"><h1>Chapter %s</h1><script>document.body.append("SCRIPT-RAN")</script>`, req.URL.Path[3:])
		default:
			http.NotFound(w, req)
		}
	})
}

// rendererPIDs are the renderer processes of b's group.
func rendererPIDs(b *browser) []int {
	var out []int
	for _, pid := range chromiumPIDs(b.pid, "") {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if strings.Contains(string(cmdline), "--type=renderer") {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// TestRender_SessionKeepsItsContextAndRenderer: the renders of one session
// take the tab made ahead in the session's context (the stylesheet comes
// from its HTTP cache, no renderer process starts for them), another
// session gets a context of its own, and a context no render takes ends
// after the idle period, leaving Chromium's tabs and contexts as before.
func TestRender_SessionKeepsItsContextAndRenderer(t *testing.T) {
	path := testsupport.ChromiumPath(t)
	if !strings.Contains(path, "headless-shell") {
		t.Skip("sessions are the headless shell's (session.go)")
	}
	s := chapterSite(t)
	var taken atomic.Int32
	r := newRenderer(t, Config{ChromiumPath: path, AllowedHosts: allowlist.MustParse(s.hostPort()), Timeout: 20 * time.Second}, func(r *Renderer) {
		r.hooks.sessionIdle = 2 * time.Second
		r.hooks.mark = func(step string) {
			if step == "session tab taken" {
				taken.Add(1)
			}
		}
	})
	mustRender(t, r, Source{HTML: "<p>warm up</p>"}, settings(spec.Options{}))
	b := r.current()
	ctx := context.Background()
	tabsBefore, err := r.pageTargets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	contextsBefore := browserContexts(t, b)

	var pids [][]int
	for i := range 4 {
		out := mustRender(t, r, Source{URL: fmt.Sprintf("%s/ch%d", s.URL, i), Session: "manual-1"}, settings(spec.Options{}))
		if text := pdfText(t, out.pdf); !strings.Contains(text, fmt.Sprintf("Chapter %d", i)) || !strings.Contains(text, "SCRIPT-RAN") {
			t.Fatalf("chapter %d printed:\n%s", i, text)
		}
		pids = append(pids, rendererPIDs(b))
	}
	if got := taken.Load(); got != 3 {
		t.Errorf("%d renders took the session's tab, want 3 (all but the first)", got)
	}
	if n := s.count("/style.css"); n != 1 {
		t.Errorf("the stylesheet was fetched %d times in one session, want 1 (its HTTP cache)", n)
	}
	for i := 2; i < len(pids); i++ {
		if !slices.Equal(pids[i], pids[1]) {
			t.Errorf("renderer processes changed within the session: after render 2 %v, after render %d %v", pids[1], i+1, pids[i])
		}
	}

	mustRender(t, r, Source{URL: s.URL + "/ch9", Session: "manual-2"}, settings(spec.Options{}))
	if got := taken.Load(); got != 3 {
		t.Errorf("another session took a tab of the first")
	}
	if n := s.count("/style.css"); n != 2 {
		t.Errorf("the stylesheet was fetched %d times after another session's render, want 2", n)
	}

	testsupport.Eventually(t, 15*time.Second, func() error {
		n, err := r.pageTargets(ctx)
		if err != nil {
			return err
		}
		c := browserContexts(t, b)
		return testsupport.Unless(n == tabsBefore && c == contextsBefore, "%d tabs and %d contexts, %d and %d before the sessions", n, c, tabsBefore, contextsBefore)
	})
}

// TestRender_SessionEndsOnFailureAndClose: a session's render that fails
// ends its context (the next render of the session starts afresh), and Close
// with a parked context leaves no process and no goroutine behind.
func TestRender_SessionEndsOnFailureAndClose(t *testing.T) {
	// Serial (no t.Parallel): it counts the goroutines of the whole test
	// binary.
	path := testsupport.ChromiumPath(t)
	if !strings.Contains(path, "headless-shell") {
		t.Skip("sessions are the headless shell's (session.go)")
	}
	s := chapterSite(t)
	// The renderer's and chromedp's goroutines: a whole-binary count also
	// moves with the site's server connections and the runtime's own.
	ours := func() int {
		buf := make([]byte, 1<<20)
		n := 0
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "render.Test") || strings.Contains(g, "render.TestMain") {
				continue // this test's and the binary's own
			}
			if strings.Contains(g, "pdfexport/internal/render.") || strings.Contains(g, "chromedp/chromedp.") {
				n++
			}
		}
		return n
	}
	before := ours()
	var taken atomic.Int32
	r, err := New(Config{ChromiumPath: path, AllowedHosts: allowlist.MustParse(s.hostPort()), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r.hooks.mark = func(step string) {
		if step == "session tab taken" {
			taken.Add(1)
		}
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			r.Close()
		}
	})
	sink := func(_ context.Context, pdf io.Reader) error { _, err := io.Copy(io.Discard, pdf); return err }
	ctx := context.Background()
	if _, err := r.Render(ctx, Source{URL: s.URL + "/ch1", Session: "m"}, settings(spec.Options{}), sink); err != nil {
		t.Fatal(err)
	}
	b := r.current()
	contextsParked := browserContexts(t, b)
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = r.Render(short, Source{URL: s.URL + "/ch2", Session: "m"}, settings(spec.Options{WaitFor: "false"}), sink)
	cancel()
	if err == nil {
		t.Fatal("a render whose wait_for is never true succeeded")
	}
	if got := taken.Load(); got != 1 {
		t.Fatalf("the failing render took the session's tab %d times, want 1", got)
	}
	if n := browserContexts(t, b); n != contextsParked-1 {
		t.Errorf("%d browser contexts after the session's render failed, want %d (its context ended)", n, contextsParked-1)
	}
	if _, err := r.Render(ctx, Source{URL: s.URL + "/ch3", Session: "m"}, settings(spec.Options{}), sink); err != nil {
		t.Fatalf("the session's render after a failure: %v", err)
	}
	if got := taken.Load(); got != 1 {
		t.Errorf("the render after the failure took a tab of the ended context")
	}

	r.Close() // a context of the session is parked now
	closed = true
	if pids := chromiumPIDs(b.pid, b.dataDir); len(pids) != 0 {
		t.Errorf("browser processes left after Close: %v", pids)
	}
	settled := testsupport.Within(10*time.Second, func() error {
		n := ours()
		return testsupport.Unless(n <= before, "%d goroutines of render and chromedp, %d before", n, before)
	})
	if settled != nil {
		buf := make([]byte, 1<<20)
		t.Errorf("%v after Close:\n%s", settled, buf[:runtime.Stack(buf, true)])
	}
}

// TestRender_SessionRenderCanceledWhileLoadingEndsAtOnce: a session's render
// canceled while its page still waits for the server returns within a
// second or two, not when the server answers: ending a tab whose navigation
// has not committed must not wait for that navigation.
func TestRender_SessionRenderCanceledWhileLoadingEndsAtOnce(t *testing.T) {
	path := testsupport.ChromiumPath(t)
	if !strings.Contains(path, "headless-shell") {
		t.Skip("sessions are the headless shell's (session.go)")
	}
	const serverDelay = 8 * time.Second
	var asked atomic.Int32
	s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		asked.Add(1)
		select { // a slow docs server
		case <-time.After(serverDelay):
		case <-req.Context().Done():
			return
		}
		fmt.Fprint(w, "<!doctype html><h1>late</h1>")
	})
	r := newRenderer(t, Config{ChromiumPath: path, AllowedHosts: allowlist.MustParse(s.hostPort()), Timeout: 30 * time.Second})
	mustRender(t, r, Source{HTML: "<p>warm up</p>"}, settings(spec.Options{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for asked.Load() == 0 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	sink := func(_ context.Context, pdf io.Reader) error { _, err := io.Copy(io.Discard, pdf); return err }
	_, err := r.Render(ctx, Source{URL: s.URL + "/slow", Session: "m"}, settings(spec.Options{}), sink)
	took := time.Since(start)
	if err == nil {
		t.Fatal("a render canceled while loading succeeded")
	}
	if took > serverDelay/2 {
		t.Errorf("the canceled session render returned after %s; the server answers after %s", took.Round(time.Millisecond), serverDelay)
	}
}

// TestRender_HeadingMarks: MarkHeadings marks the headings a reader sees,
// in order, with their level and visible text, from which the assembly
// builds the outline of an untagged print; a page that breaks the marking
// script prints tagged with Chromium's outline instead.
func TestRender_HeadingMarks(t *testing.T) {
	const headings = `<h1>One</h1><h2 style="display:none">Hidden</h2><h2>Two <span aria-hidden="true">#</span> <em>parts</em></h2>` +
		`<div role="heading" aria-level="3">Three &amp; more</div><h3> </h3><h2>Four ` + "\U0001F600" + `</h2>`
	s := newSite(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch req.URL.Path {
		case "/plain":
			fmt.Fprint(w, "<!doctype html><title>plain</title>"+headings)
		case "/breaks":
			fmt.Fprint(w, "<!doctype html><title>breaks</title><script>encodeURIComponent = () => { throw new Error('not here') }</script>"+headings)
		default:
			http.NotFound(w, req)
		}
	})
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort()), Timeout: 20 * time.Second})
	print := func(path string) assemble.Info {
		t.Helper()
		file := filepath.Join(t.TempDir(), "page.pdf")
		if _, err := r.Render(context.Background(), Source{URL: s.URL + path, MarkAnchors: true, MarkHeadings: true}, settings(spec.Options{}), testsupport.FileSink(file)); err != nil {
			t.Fatal(err)
		}
		info, err := assemble.Inspect(file)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	var outline func(hs []assemble.Heading) string
	outline = func(hs []assemble.Heading) string {
		var parts []string
		for _, h := range hs {
			p := h.Title
			if len(h.Children) > 0 {
				p += " [" + outline(h.Children) + "]"
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, ", ")
	}
	const want = "One [Two parts [Three & more], Four \U0001F600]"
	if got := outline(print("/plain").Outline); got != want {
		t.Errorf("outline from the heading marks: %q, want %q", got, want)
	}
	// Chromium keeps the spaces around the hidden part: compared with
	// white space folded.
	if got := strings.Join(strings.Fields(outline(print("/breaks").Outline)), " "); got != want {
		t.Errorf("outline of a page that breaks the marks (Chromium's): %q, want %q", got, want)
	}
}
