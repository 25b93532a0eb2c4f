package worker

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// siteFixture is a real docs site built or installed on this machine,
// served from root, and what its navigation lists.
type siteFixture struct {
	name   string
	build  func(t *testing.T, root string) // fills root with the site
	start  string                          // the start page, relative to the server
	site   exportclient.Site               // URL filled in by the test
	nav    string                          // the navigation the worker should find
	titles []string                        // the chapters, in the navigation's order
	edit   string                          // a page to change, relative to root
}

func siteFixtures() []siteFixture {
	return []siteFixture{
		{
			// Debian's Node.js API docs: 60-odd modules; the first five
			// (max_chapters) are printed, which keeps the test to a few
			// renders while reading the navigation of the whole site.
			name: "nodejs", build: copyNodeDocs, start: "/index.html", site: exportclient.Site{MaxChapters: 5}, nav: "navigation",
			titles: []string{"About this documentation", "Usage and example", "Assertion testing", "Asynchronous context tracking", "Async hooks"},
			edit:   "synopsis.html",
		},
		{
			name: "mkdocs", build: buildMkDocs, start: "/", nav: "mkdocs",
			titles: []string{"Home", "Getting started", "Install", "Configure", "Reference"},
			edit:   "guide/install/index.html",
		},
		{
			name: "sphinx", build: buildSphinx, start: "/index.html", nav: "sphinx",
			titles: []string{"Intro", "Install", "Configure", "Reference"},
			edit:   "reference.html",
		},
	}
}

// TestWorker_SiteManuals: a manual straight from each real site has the
// navigation's chapters, in order, with its titles; after one page
// changed the next release prints that chapter alone; an unchanged site
// printed again prints none.
func TestWorker_SiteManuals(t *testing.T) {
	t.Parallel()
	testsupport.SkipShort(t, "Redis, Chromium, mkdocs and sphinx-build")
	for _, fx := range siteFixtures() {
		t.Run(fx.name, func(t *testing.T) {
			root := t.TempDir()
			fx.build(t, root)
			srv := httptest.NewServer(http.FileServer(http.Dir(root)))
			t.Cleanup(srv.Close)
			host := strings.TrimPrefix(srv.URL, "http://")
			redis := testsupport.StartRedis(t)
			storeDir := t.TempDir()
			cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+storeDir, "ADMIN_ADDR=",
				"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+host, "BATCH_QUEUES=")
			startWorker(t, cfg, Options{Logger: slog.New(slog.DiscardHandler), Hostname: "site"})
			c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: host})
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			site := fx.site
			site.URL = srv.URL + fx.start
			export := func(version string) exportclient.Result {
				t.Helper()
				job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "site-" + fx.name, Version: version, Site: &site,
					Options: exportclient.Options{TOC: true, Outline: true}})
				if err != nil {
					t.Fatal(err)
				}
				st, err := c.Wait(ctx, job.TaskID, 100*time.Millisecond)
				if err != nil || st.State != exportclient.StateCompleted {
					t.Fatalf("version %s: %v %s %s", version, err, st.State, st.Error)
				}
				if st.Result.Site == nil || st.Result.Site.Nav != fx.nav {
					t.Errorf("version %s: site %+v, want the %s navigation", version, st.Result.Site, fx.nav)
				}
				return *st.Result
			}
			n := len(fx.titles)

			first := export("1")
			if got := *first.Chapters; got != (exportclient.ChapterCounts{Total: n, Rendered: n}) {
				t.Errorf("first export: chapters %+v, want %d rendered", got, n)
			}
			pdf, err := os.ReadFile(strings.TrimPrefix(first.URL, "file://"))
			if err != nil {
				t.Fatal(err)
			}
			contents := testsupport.PDFText(t, pdf)
			contents = contents[:strings.IndexByte(contents, '\f')] // the table of contents' page
			at := 0
			for _, title := range fx.titles {
				i := strings.Index(contents[at:], title)
				if i < 0 {
					t.Fatalf("the contents do not list %q after the chapters before it:\n%s", title, contents)
				}
				at += i + len(title)
			}
			if lines := strings.Count(strings.TrimSpace(contents), "\n"); lines != n {
				t.Errorf("the contents list %d lines after the heading, want %d chapters:\n%s", lines, n, contents)
			}

			page := filepath.Join(root, fx.edit)
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(b), "</body>", "<p>A paragraph added in the next release.</p></body>", 1)
			if err := os.WriteFile(page, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := *export("2").Chapters; got != (exportclient.ChapterCounts{Total: n, Rendered: 1, Reused: n - 1}) {
				t.Errorf("one page changed: chapters %+v, want 1 rendered and %d reused", got, n-1)
			}
			unchanged := export("3")
			if got := *unchanged.Chapters; got != (exportclient.ChapterCounts{Total: n, Reused: n}) {
				t.Errorf("nothing changed: chapters %+v, want all %d reused", got, n)
			}
			again := export("3")
			if again.Rendered || again.ArtifactKey != unchanged.ArtifactKey || *again.Chapters != (exportclient.ChapterCounts{Total: n, Reused: n}) {
				t.Errorf("the same release again: rendered %v, key %s (was %s), chapters %+v: want the stored manual", again.Rendered, again.ArtifactKey, unchanged.ArtifactKey, *again.Chapters)
			}
		})
	}
}

// copyNodeDocs copies Debian's Node.js API docs (nodejs-doc, which make
// setup installs): the HTML pages and their assets.
func copyNodeDocs(t *testing.T, root string) {
	t.Helper()
	const src = "/usr/share/doc/nodejs/api"
	if _, err := os.Stat(filepath.Join(src, "index.html")); err != nil {
		t.Fatalf("%s: %v (make setup installs nodejs-doc)", src, err)
	}
	if out, err := exec.Command("sh", "-c", `cp -r "$1"/*.html "$1"/assets "$2"/`, "sh", src, root).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", src, err, out)
	}
}

// fixtureSource is a site generator's fixture in internal/tasks/site/testdata.
func fixtureSource(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "tasks", "site", "testdata", "src", name))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (make setup installs it: apt-get install -y %s)", name, pkg)
	}
	return path
}

func run(t *testing.T, dir, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
}

func buildMkDocs(t *testing.T, root string) {
	t.Helper()
	bin := needTool(t, "mkdocs", "mkdocs")
	run(t, fixtureSource(t, "mkdocs"), bin, "build", "--quiet", "--site-dir", root)
}

func buildSphinx(t *testing.T, root string) {
	t.Helper()
	bin := needTool(t, "sphinx-build", "python3-sphinx")
	run(t, fixtureSource(t, "sphinx"), bin, "-q", "-b", "html", "-d", t.TempDir(), ".", root)
}

// TestWorker_SiteFailsForGood: a site whose navigation the worker cannot
// find, or whose start page is not there, fails at its first attempt,
// naming the field or the page; nothing is printed.
func TestWorker_SiteFailsForGood(t *testing.T) {
	t.Parallel()
	testsupport.SkipShort(t, "Redis and Chromium")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/plain.html" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`<!doctype html><h1>No navigation</h1><p><a href="other.html">a link in a paragraph</a></p>`))
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	redis := testsupport.StartRedis(t)
	storeDir := t.TempDir()
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+storeDir, "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+host, "BATCH_QUEUES=")
	startWorker(t, cfg, Options{})
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: host})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, path, nav, says string
	}{
		{"no navigation", "/plain.html", "", "source.site.nav: " + srv.URL + "/plain.html has no navigation of a generator it knows"},
		{"a selector that selects nothing", "/plain.html", "#sidebar a", "no links in the navigation #sidebar a"},
		{"no start page", "/gone.html", "", srv.URL + "/gone.html answered 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "refused", Version: "1", Site: &exportclient.Site{URL: srv.URL + tc.path, Nav: tc.nav}})
			if err != nil {
				t.Fatal(err)
			}
			st, err := c.Wait(ctx, job.TaskID, 100*time.Millisecond)
			if err != nil || st.State != exportclient.StateFailed || st.Retried != 0 || !strings.Contains(st.Error, tc.says) {
				t.Fatalf("%v: %s after %d retries: %q, want failed for good saying %q", err, st.State, st.Retried, st.Error, tc.says)
			}
		})
	}
	if entries, _ := os.ReadDir(filepath.Join(storeDir, "refused")); len(entries) != 0 {
		t.Errorf("%d files stored for refused sites", len(entries))
	}
}

func TestSameOriginRedirect(t *testing.T) {
	req := func(raw string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		to   string
		hops int
		ok   bool
	}{
		{"http://docs.test/b.html", 1, true},
		{"HTTP://DOCS.test/b.html", 1, true},
		{"https://docs.test/b.html", 1, false},
		{"http://docs.test:8080/b.html", 1, false},
		{"http://evil.test/b.html", 1, false},
		{"http://docs.test/b.html", maxSiteRedirects, false},
	} {
		via := make([]*http.Request, tc.hops)
		for i := range via {
			via[i] = req("http://docs.test/a.html")
		}
		if err := sameOriginRedirect(req(tc.to), via); (err == nil) != tc.ok {
			t.Errorf("redirect to %s after %d: %v, want ok %v", tc.to, tc.hops, err, tc.ok)
		}
	}
}

// TestWorker_SiteBehindALogin: a docs site whose every page needs the
// credentials of SOURCE_AUTH_FILE is read with them, as its chapters
// render with them; a stylesheet of another origin that the chapters
// load (and the discovery identifies) gets none.
func TestWorker_SiteBehindALogin(t *testing.T) {
	t.Parallel()
	testsupport.SkipShort(t, "Redis and Chromium")
	const token = "Bearer site-s3cret"
	var leaked, cssAsked atomic.Int64
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cssAsked.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
			leaked.Add(1)
		}
		w.Header().Set("Content-Type", "text/css")
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte("h1 { color: #336; }"))
	}))
	t.Cleanup(cdn.Close)
	pages := map[string]string{
		"/index.html": `<!doctype html><title>Guide</title><nav id="toc"><a href="a.html">Alpha</a><a href="b.html">Beta</a></nav>`,
		"/a.html":     `<!doctype html><title>Alpha</title><link rel="stylesheet" href="` + cdn.URL + `/site.css"><h1>Alpha chapter, members only</h1>`,
		"/b.html":     `<!doctype html><title>Beta</title><link rel="stylesheet" href="` + cdn.URL + `/site.css"><h1>Beta chapter, members only</h1>`,
	}
	var refused atomic.Int64
	docs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != token || !strings.Contains(r.Header.Get("Cookie"), "sso=yes") {
			refused.Add(1)
			http.Error(w, "log in first", http.StatusForbidden)
			return
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(docs.Close)
	docsHost, cdnHost := strings.TrimPrefix(docs.URL, "http://"), strings.TrimPrefix(cdn.URL, "http://")
	authFile := filepath.Join(t.TempDir(), "source-auth.json")
	rules := `{"rules": [{"hosts": "http://` + docsHost + `", "headers": {"Authorization": "` + token + `"},
		"cookies": [{"name": "sso", "value": "yes", "path": "/"}]}]}`
	if err := os.WriteFile(authFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	redis := testsupport.StartRedis(t)
	cfg := loadConfig(t, "REDIS_URL="+redis.URL(), "STORAGE_URL=file://"+t.TempDir(), "ADMIN_ADDR=",
		"CHROMIUM_PATH="+testsupport.ChromiumPath(t), "ALLOWED_HOSTS="+docsHost+","+cdnHost, "BATCH_QUEUES=",
		"SOURCE_AUTH_FILE="+authFile)
	startWorker(t, cfg, Options{Logger: slog.New(slog.DiscardHandler), Hostname: "site-login"})
	c := newClient(t, exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}, AllowedHosts: docsHost + "," + cdnHost})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "private-guide", Version: "1",
		Site: &exportclient.Site{URL: docs.URL + "/index.html", Nav: "#toc a"}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Wait(ctx, job.TaskID, 100*time.Millisecond)
	if err != nil || st.State != exportclient.StateCompleted {
		t.Fatalf("%v: %s %s (%d requests refused by the site)", err, st.State, st.Error, refused.Load())
	}
	if got := *st.Result.Chapters; got != (exportclient.ChapterCounts{Total: 2, Rendered: 2}) {
		t.Errorf("chapters %+v, want the navigation's 2 rendered", got)
	}
	pdf, err := os.ReadFile(strings.TrimPrefix(st.Result.URL, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	if text := testsupport.PDFText(t, pdf); !strings.Contains(text, "Alpha chapter, members only") || !strings.Contains(text, "Beta chapter, members only") {
		t.Errorf("the manual does not hold the protected chapters:\n%s", text)
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("the site refused %d requests without credentials", n)
	}
	if cssAsked.Load() == 0 {
		t.Error("the other origin's stylesheet was never asked for: the test checks nothing there")
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("%d requests to another origin carried the site's credentials", n)
	}
}
