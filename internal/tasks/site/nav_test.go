package site

import (
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// chaptersOf is what discovery reads of a saved start page served at
// base: the generator found and the chapters, without their revisions.
func chaptersOf(t *testing.T, doc []byte, base string, s Spec) ([]Chapter, string, error) {
	t.Helper()
	root, err := html.Parse(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	links, gen, err := navLinks(root, s.Nav)
	if err != nil {
		return nil, gen, err
	}
	if b := baseHref(root, u); b != nil {
		for i := range links {
			if r, err := b.Parse(links[i].href); err == nil {
				links[i].href = r.String()
			}
		}
	}
	cs, err := fold(u, links, s)
	return cs, gen, err
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) && strings.HasPrefix(path, "/usr/") {
			t.Skipf("%s is not installed (make setup installs it)", path)
		}
		t.Fatal(err)
	}
	return b
}

func titles(cs []Chapter) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Title
	}
	return out
}

func urls(cs []Chapter) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.URL
	}
	return out
}

func TestNav_RealGenerators(t *testing.T) {
	mkdocsURLs := []string{"http://docs.test/m/", "http://docs.test/m/start/", "http://docs.test/m/guide/install/",
		"http://docs.test/m/guide/configure/", "http://docs.test/m/reference/"}
	mkdocsTitles := []string{"Home", "Getting started", "Install", "Configure", "Reference"}
	for _, tc := range []struct {
		name, file, base, nav, generator string
		urls, titles                     []string
	}{
		{"mkdocs default theme", "testdata/mkdocs.html", "http://docs.test/m/", "", NavMkDocs, mkdocsURLs, mkdocsTitles},
		{"mkdocs default theme by name", "testdata/mkdocs.html", "http://docs.test/m/", NavMkDocs, NavMkDocs, mkdocsURLs, mkdocsTitles},
		{"mkdocs readthedocs theme", "testdata/mkdocs-readthedocs.html", "http://docs.test/m/", "", NavMkDocs, mkdocsURLs, mkdocsTitles},
		{"mkdocs material", "testdata/mkdocs-material.html", "http://docs.test/m/", "", "mkdocs-material", mkdocsURLs, mkdocsTitles},
		{"mkdocs material by name", "testdata/mkdocs-material.html", "http://docs.test/m/", NavMkDocs, "mkdocs-material", mkdocsURLs, mkdocsTitles},
		{"sphinx alabaster", "testdata/sphinx.html", "http://docs.test/s/index.html", "", NavSphinx,
			[]string{"http://docs.test/s/intro.html", "http://docs.test/s/usage/install.html", "http://docs.test/s/usage/configure.html", "http://docs.test/s/reference.html"},
			[]string{"Intro", "Install", "Configure", "Reference"}},
		{"a CSS selector", "testdata/sphinx.html", "http://docs.test/s/index.html", ".sphinxsidebar li.toctree-l1", "selector",
			[]string{"http://docs.test/s/intro.html", "http://docs.test/s/usage/install.html", "http://docs.test/s/usage/configure.html", "http://docs.test/s/reference.html"},
			[]string{"Intro", "Install", "Configure", "Reference"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, gen, err := chaptersOf(t, readFile(t, tc.file), tc.base, Spec{Nav: tc.nav})
			if err != nil {
				t.Fatal(err)
			}
			if gen != tc.generator {
				t.Errorf("generator %q, want %q", gen, tc.generator)
			}
			if got := urls(cs); !slices.Equal(got, tc.urls) {
				t.Errorf("urls\n got %q\nwant %q", got, tc.urls)
			}
			if got := titles(cs); !slices.Equal(got, tc.titles) {
				t.Errorf("titles\n got %q\nwant %q", got, tc.titles)
			}
		})
	}
}

// Node.js' API docs come from no generator discovery names: their
// navigation landmark (#column2) lists the modules, the last entry a
// link to GitHub, which is not of the site's origin.
func TestNav_NodeJSDocs(t *testing.T) {
	doc := readFile(t, "/usr/share/doc/nodejs/api/index.html")
	cs, gen, err := chaptersOf(t, doc, "http://127.0.0.1:8080/api/index.html", Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if gen != "navigation" {
		t.Errorf("generator %q, want navigation", gen)
	}
	// What the page's own list says, in order, read with the standard
	// library rather than the parser under test.
	var want []string
	for _, line := range strings.Split(string(doc), "\n") {
		if i := strings.Index(line, `<li><a href="`); i >= 0 && strings.Contains(line, `class="nav-`) {
			href := line[i+len(`<li><a href="`):]
			href = href[:strings.IndexByte(href, '"')]
			if !strings.Contains(href, "://") {
				want = append(want, "http://127.0.0.1:8080/api/"+href)
			}
		}
	}
	if len(want) < 50 {
		t.Fatalf("the page lists %d modules; the test reads it wrong", len(want))
	}
	if got := urls(cs); !slices.Equal(got, want) {
		t.Errorf("urls\n got %q\nwant %q", got, want)
	}
	if cs[0].Title != "About this documentation" {
		t.Errorf("first title %q", cs[0].Title)
	}
}

// Docusaurus and Antora could not be built here; their markup is the
// class names their default themes document, written by hand.
func TestNav_DocumentedMarkup(t *testing.T) {
	for _, tc := range []struct {
		name, doc, generator string
		want                 []string
	}{
		{"docusaurus sidebar", `<html><head><meta name="generator" content="Docusaurus v3.5.2"></head><body>
<nav class="navbar"><a class="navbar__brand" href="/">Site</a></nav>
<aside class="theme-doc-sidebar-container"><nav aria-label="Docs sidebar" class="menu thin-scrollbar">
<ul class="theme-doc-sidebar-menu menu__list">
<li class="menu__list-item"><a class="menu__link" href="/docs/intro">Tutorial Intro</a></li>
<li class="menu__list-item"><div class="menu__list-item-collapsible"><a class="menu__link menu__link--sublist menu__link--sublist-caret" href="#">Basics</a></div>
<ul class="menu__list"><li class="menu__list-item"><a class="menu__link" href="/docs/basics/create-a-page">Create a Page</a></li>
<li class="menu__list-item"><a class="menu__link" href="/docs/basics/deploy#step">Deploy</a></li></ul></li>
</ul></nav></aside></body></html>`, NavDocusaurus, []string{"Tutorial Intro", "Create a Page", "Deploy"}},
		{"antora nav", `<html><head><meta name="generator" content="Antora 3.1.7"></head><body>
<div class="nav-container"><aside class="nav"><div class="panels"><div class="nav-panel-menu is-active" data-panel="menu">
<nav class="nav-menu"><h3 class="title"><a href="../index.html">Manual</a></h3>
<ul class="nav-list"><li class="nav-item is-active" data-depth="0"><ul class="nav-list">
<li class="nav-item" data-depth="1"><a class="nav-link" href="../index.html">Overview</a></li>
<li class="nav-item" data-depth="1"><button class="nav-item-toggle"></button><a class="nav-link" href="install.html">Install</a>
<ul class="nav-list"><li class="nav-item" data-depth="2"><a class="nav-link" href="install.html#linux">Linux</a></li></ul></li>
<li class="nav-item" data-depth="1"><span class="nav-text">Text only</span></li>
<li class="nav-item" data-depth="1"><a class="nav-link" href="config.html">Configure</a></li>
</ul></li></ul></nav></div></div></aside></div></body></html>`, NavAntora, []string{"Overview", "Install", "Configure"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, gen, err := chaptersOf(t, []byte(tc.doc), "http://docs.test/manual/2.0/guide/page.html", Spec{})
			if err != nil {
				t.Fatal(err)
			}
			if gen != tc.generator {
				t.Errorf("generator %q, want %q", gen, tc.generator)
			}
			if got := titles(cs); !slices.Equal(got, tc.want) {
				t.Errorf("titles\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestSitemap_MkDocs(t *testing.T) {
	links, err := sitemapLinks(strings.NewReader(string(readFile(t, "testdata/sitemap.xml"))))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://example.invalid/")
	cs, err := fold(u, links, Spec{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://example.invalid/", "http://example.invalid/reference/", "http://example.invalid/start/",
		"http://example.invalid/guide/configure/", "http://example.invalid/guide/install/"}
	if got := urls(cs); !slices.Equal(got, want) {
		t.Errorf("urls\n got %q\nwant %q", got, want)
	}
}
