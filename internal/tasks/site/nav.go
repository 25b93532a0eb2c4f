package site

import (
	"fmt"
	"strings"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// generator names a way to find a site's navigation. Each reads the
// markup its generator writes; Detect tells it from the page itself.
type generator struct {
	Name string
	// detect reports whether the page was built by the generator.
	detect func(doc *html.Node) bool
	// links are the navigation's links, in document order.
	links cascadia.Matcher
	// skip are links within the navigation that are not chapters (a
	// page's own table of contents, menus that only open a submenu).
	skip cascadia.Matcher
}

// Names of the navigations Discover knows besides a CSS selector.
const (
	NavAuto       = "auto"
	NavSphinx     = "sphinx"
	NavMkDocs     = "mkdocs"
	NavDocusaurus = "docusaurus"
	NavAntora     = "antora"
	NavSitemap    = "sitemap"
)

func mustSel(s string) cascadia.Matcher {
	return cascadia.MustCompile(s)
}

// generators are tried in this order by NavAuto: the first whose detect
// matches and which finds a link wins.
var generators = []generator{
	{
		// Sphinx writes every toctree, in the page and in the sidebar of
		// each theme (alabaster, classic, Read the Docs, pydoctheme), as
		// list items of class toctree-lN holding an a.reference.internal.
		Name: NavSphinx,
		detect: func(doc *html.Node) bool {
			return hasScript(doc, "documentation_options.js") || generatorIs(doc, "sphinx")
		},
		links: mustSel(`li[class*="toctree-l"] > a.reference.internal`),
	},
	{
		// Material for MkDocs: the primary navigation; the secondary one
		// nested in it is the current page's table of contents.
		Name:   NavMkDocs + "-material",
		detect: func(doc *html.Node) bool { return generatorIs(doc, "mkdocs-material") },
		links:  mustSel(`nav.md-nav--primary a.md-nav__link[href]`),
		skip:   mustSel(`nav.md-nav--secondary a`),
	},
	{
		// MkDocs' own themes: the default one's navbar (its dropdown
		// toggles only open a section), the readthedocs one's menu. They
		// write no generator tag, but credit MkDocs in the footer.
		Name: NavMkDocs,
		detect: func(doc *html.Node) bool {
			return generatorIs(doc, "mkdocs") || cascadia.Query(doc, mkdocsCredit) != nil
		},
		links: mustSel(`#navbar-collapse ul.navbar-nav:not(.ml-auto) a[href]:not(.dropdown-toggle), ` +
			`.wy-menu-vertical li[class*="toctree-l"] > a.reference.internal[href]`),
	},
	{
		// Docusaurus: the docs sidebar's menu links; a category that is
		// only a heading has a.menu__link--sublist-caret without a page.
		Name:   NavDocusaurus,
		detect: func(doc *html.Node) bool { return generatorIs(doc, "docusaurus") },
		links:  mustSel(`nav.menu a.menu__link[href]`),
		skip:   mustSel(`a.menu__link[href="#"]`),
	},
	{
		// Antora's default UI: the component version's navigation tree.
		Name:   NavAntora,
		detect: func(doc *html.Node) bool { return generatorIs(doc, "antora") },
		links:  mustSel(`nav.nav-menu a.nav-link[href]`),
	},
	{
		// Anything else with a navigation landmark (Node.js' API docs):
		// the links of its lists, not a logo's or a search box's.
		Name:   "navigation",
		detect: func(*html.Node) bool { return true },
		links:  mustSel(`[role="navigation"] li > a[href], nav li > a[href]`),
	},
}

// byName is the generator a nav value names, or nil.
func byName(name string) *generator {
	for i := range generators {
		g := &generators[i]
		if g.Name == name {
			return g
		}
	}
	return nil
}

// link is an entry of the navigation as written.
type link struct {
	href, title string
}

// navLinks lists the links of doc's navigation as nav names it: a
// generator, NavAuto, or a CSS selector of links (or of elements whose
// links are meant). It says which generator matched.
func navLinks(doc *html.Node, nav string) ([]link, string, error) {
	switch nav {
	case "", NavAuto:
		for i := range generators {
			g := &generators[i]
			if !g.detect(doc) {
				continue
			}
			if ls := g.find(doc); len(ls) > 0 {
				return ls, g.Name, nil
			}
		}
		return nil, "", nil
	case NavMkDocs:
		// Either theme family; the page says which.
		for _, name := range []string{NavMkDocs + "-material", NavMkDocs} {
			if ls := byName(name).find(doc); len(ls) > 0 {
				return ls, name, nil
			}
		}
		return nil, NavMkDocs, nil
	}
	if g := byName(nav); g != nil {
		return g.find(doc), g.Name, nil
	}
	sel, err := cascadia.Compile(nav)
	if err != nil {
		return nil, "", fmt.Errorf("not a generator (%s) nor a CSS selector: %w",
			strings.Join([]string{NavAuto, NavSphinx, NavMkDocs, NavDocusaurus, NavAntora, NavSitemap}, ", "), err)
	}
	var out []link
	for _, n := range cascadia.QueryAll(doc, sel) {
		if n.DataAtom == atom.A {
			out = appendLink(out, n)
			continue
		}
		for _, a := range cascadia.QueryAll(n, mustSel("a[href]")) {
			out = appendLink(out, a)
		}
	}
	return out, "selector", nil
}

func (g *generator) find(doc *html.Node) []link {
	skip := map[*html.Node]bool{}
	if g.skip != nil {
		for _, n := range cascadia.QueryAll(doc, g.skip) {
			skip[n] = true
		}
	}
	var out []link
	for _, n := range cascadia.QueryAll(doc, g.links) {
		if !skip[n] {
			out = appendLink(out, n)
		}
	}
	return out
}

func appendLink(out []link, a *html.Node) []link {
	href, ok := attr(a, "href")
	if !ok {
		return out
	}
	return append(out, link{href: strings.TrimSpace(href), title: text(a)})
}

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

// text is n's visible text with its white space collapsed; the icons and
// screen-reader labels some themes put in links are not text nodes.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
			b.WriteByte(' ')
		case html.ElementNode:
			if n.DataAtom == atom.Script || n.DataAtom == atom.Style || n.DataAtom == atom.Svg {
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

var (
	metaGenerator = mustSel(`meta[name="generator"]`)
	scripts       = mustSel(`script[src]`)
	mkdocsCredit  = mustSel(`a[href^="https://www.mkdocs.org"], #mkdocs_search_modal`)
)

// generatorIs reports whether a <meta name="generator"> of doc names the
// generator (case-insensitively, as a prefix of one of its entries).
func generatorIs(doc *html.Node, name string) bool {
	for _, m := range cascadia.QueryAll(doc, metaGenerator) {
		content, _ := attr(m, "content")
		for _, part := range strings.Split(strings.ToLower(content), ",") {
			if strings.HasPrefix(strings.TrimSpace(part), name) {
				return true
			}
		}
	}
	return false
}

func hasScript(doc *html.Node, suffix string) bool {
	for _, s := range cascadia.QueryAll(doc, scripts) {
		if src, _ := attr(s, "src"); strings.HasSuffix(strings.SplitN(src, "?", 2)[0], suffix) {
			return true
		}
	}
	return false
}
