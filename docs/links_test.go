package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The README is a newcomer's page and the rest lives in pages here; these
// tests keep the two honest: a link or a named file that moved, or never
// existed, fails here instead of in a reader's browser.

var (
	// mdLink matches an inline Markdown link's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// codeSpan matches an inline code span.
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	// repoPath is what a code span naming a file of this repository looks
	// like: a relative path of plain segments.
	repoPath = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$`)
	// runbookLink matches a page anchor named in an alert's runbook.
	runbookLink = regexp.MustCompile(`((?:docs/)?[A-Z][A-Z-]*\.md)#([a-z0-9_-]+)`)
)

// prosePages are the Markdown pages for readers, relative to the repository
// root: the README and every page of docs/.
func prosePages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	matches, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		pages = append(pages, "docs/"+m)
	}
	if len(pages) < 8 {
		t.Fatalf("found only %v: the page list is wrong", pages)
	}
	return pages
}

// prose is a page without its fenced code blocks: shell sessions and
// examples name files of the reader's machine, not of the repository.
func prose(raw string) string {
	var b strings.Builder
	fence := false
	for _, line := range strings.Split(raw, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if !fence {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// anchors are the fragment names GitHub gives the headings of a page:
// lower case, punctuation but '-' and '_' dropped, spaces as '-', a repeated
// one numbered.
func anchors(raw string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(prose(raw), "\n") {
		text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		for i := 1; out[slug]; i++ {
			slug = fmt.Sprintf("%s-%d", b.String(), i)
		}
		out[slug] = true
	}
	return out
}

// checkTarget reports why target (a path relative to the repository root,
// with an optional #fragment) does not resolve, or "" when it does.
func checkTarget(target string) string {
	path, frag, _ := strings.Cut(target, "#")
	raw, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		if st, serr := os.Stat(filepath.Join("..", path)); serr == nil && st.IsDir() && frag == "" {
			return ""
		}
		return "no such file"
	}
	if frag != "" && strings.HasSuffix(path, ".md") && !anchors(string(raw))[frag] {
		return "no heading #" + frag
	}
	return ""
}

// TestPagesLinkWhatExists fails naming each relative link of the README or
// a docs/ page whose file, or whose heading, does not exist.
func TestPagesLinkWhatExists(t *testing.T) {
	links := 0
	for _, page := range prosePages(t) {
		raw, err := os.ReadFile(filepath.Join("..", page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(prose(string(raw)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			resolved := page + target // "#anchor" on the page itself
			if !strings.HasPrefix(target, "#") {
				resolved = filepath.ToSlash(filepath.Join(filepath.Dir(page), target))
			}
			if why := checkTarget(resolved); why != "" {
				t.Errorf("%s links %s: %s", page, target, why)
			}
		}
	}
	if links < 20 {
		t.Fatalf("found only %d relative links: the pattern is wrong", links)
	}
}

// TestPagesNameFilesThatExist fails naming each file of the repository a
// page's prose names in a code span (`internal/render`, `docs/CAPACITY.md`)
// that does not exist. Paths are from the repository root, as the pages
// write them; a span under a folder the repository does not have (/dev/shm,
// ./var/…, a reader's schema.ts) is not a claim about the repository.
func TestPagesNameFilesThatExist(t *testing.T) {
	top := map[string]bool{}
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "var" && e.Name() != "bin" {
			top[e.Name()] = true
		}
	}
	named := 0
	for _, page := range prosePages(t) {
		raw, err := os.ReadFile(filepath.Join("..", page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range codeSpan.FindAllStringSubmatch(prose(string(raw)), -1) {
			span := m[1]
			if !repoPath.MatchString(span) {
				continue
			}
			first, _, nested := strings.Cut(span, "/")
			rootDoc := !nested && strings.HasSuffix(span, ".md") && strings.ToUpper(span) == span[:len(span)-3]+".MD"
			if !(nested && top[first]) && !rootDoc {
				continue
			}
			named++
			if _, err := os.Stat(filepath.Join("..", span)); err != nil {
				t.Errorf("%s names `%s`, which the repository does not have", page, span)
			}
		}
	}
	if named < 20 {
		t.Fatalf("found only %d named files: the pattern is wrong", named)
	}
}

// TestRunbooksLinkHeadingsThatExist fails naming each alert whose runbook
// points at a page or heading that does not exist.
func TestRunbooksLinkHeadingsThatExist(t *testing.T) {
	for _, file := range []string{"../deployments/prometheus/pdfexport-alerts.yml", "../deployments/prometheus/pdfexport-alerts_test.yml"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		found := runbookLink.FindAllStringSubmatch(string(raw), -1)
		if len(found) == 0 {
			t.Fatalf("%s: no runbook links a page: the pattern is wrong", file)
		}
		for _, m := range found {
			if why := checkTarget(m[1] + "#" + m[2]); why != "" {
				t.Errorf("%s: runbook links %s#%s: %s", file, m[1], m[2], why)
			}
		}
	}
}
