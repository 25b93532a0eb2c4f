package assemble_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/assemble"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// nodeDocs is Debian's nodejs package's API documentation: real pages
// nobody here wrote, which link each other.
const nodeDocs = "/usr/share/doc/nodejs/api"

// printChapters prints pages of the Node.js docs as chapters (anchor
// marks on, outline on) into dir and returns them as parts.
func printChapters(t testing.TB, dir string, pages ...string) (parts []assemble.Part, base string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(nodeDocs, "dns.html")); err != nil {
		t.Fatalf("the Node.js docs are missing (make setup installs Debian's nodejs): %v", err)
	}
	r, base := assemble.StartSite(t, http.FileServer(http.Dir(nodeDocs)))
	for i, p := range pages {
		path := filepath.Join(dir, p+".pdf")
		_, err := r.Render(context.Background(), render.Source{URL: base + p, MarkAnchors: true}, spec.Options{Outline: true}.Settings(),
			testsupport.FileSink(path))
		if err != nil {
			t.Fatalf("printing %s: %v", p, err)
		}
		parts = append(parts, assemble.Part{Path: path, URL: spec.CanonicalURL(base + p), Chapter: i})
	}
	return parts, base
}

// TestAssemble_NodeDocs: four linked pages of the Node.js docs become one
// PDF that qpdf checks clean, with every page, an outline entry per
// chapter and its headings beneath, and no link left pointing at one of
// the four pages on the web server (while links to the other pages stay).
func TestAssemble_NodeDocs(t *testing.T) {
	dir := t.TempDir()
	pages := []string{"dns.html", "assert.html", "errors.html", "cli.html"}
	parts, base := printChapters(t, dir, pages...)
	want := 0
	for _, p := range parts {
		info, err := assemble.Inspect(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		want += info.Pages
	}
	out := filepath.Join(dir, "manual.pdf")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	st, err := assemble.Assemble(context.Background(), f, parts, assemble.Options{Title: "Node.js", Outline: true})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Pages != want || st.InternalLinks == 0 || st.OutlineEntries <= len(pages) {
		t.Fatalf("stats %+v: want %d pages, internal links, more outline entries than chapters", st, want)
	}
	if out, err := exec.Command("qpdf", "--check", out).CombinedOutput(); err != nil {
		t.Fatalf("qpdf --check: %v\n%s", err, out)
	}
	raw, err := exec.Command("qpdf", "--json=2", "--json-key=outlines", "--json-key=pages", "--json-key=qpdf", out).Output()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Pages    []json.RawMessage `json:"pages"`
		Outlines []struct {
			Title string            `json:"title"`
			Page  int               `json:"destpageposfrom1"`
			Kids  []json.RawMessage `json:"kids"`
		} `json:"outlines"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) != want || len(doc.Outlines) != len(pages) {
		t.Fatalf("qpdf: %d pages, %d top-level outline entries; want %d and %d", len(doc.Pages), len(doc.Outlines), want, len(pages))
	}
	for i, o := range doc.Outlines {
		if o.Page != st.FirstPage[i] || len(o.Kids) == 0 || !strings.Contains(o.Title, "Node.js") {
			t.Errorf("outline entry %d = %q at page %d with %d entries beneath; want page %d and the chapter's headings", i, o.Title, o.Page, len(o.Kids), st.FirstPage[i])
		}
	}
	for _, p := range pages {
		if bytes.Contains(raw, []byte(`"u:`+base+p)) {
			t.Errorf("a link still opens %s on the web server", p)
		}
	}
	if !bytes.Contains(raw, []byte(`"u:`+base+"util.html")) {
		t.Error("links to pages outside the manual were lost")
	}
	if bytes.Contains(raw, []byte(assemble.AnchorPrefix)) {
		t.Error("anchor marks were left in the manual")
	}
}

// TestAnchorPrefixIsTheRenderers: the marks the renderer adds are the ones
// the assembly reads.
func TestAnchorPrefixIsTheRenderers(t *testing.T) {
	if assemble.HeadingMarkPrefix != render.HeadingMarkPrefix {
		t.Errorf("assemble reads heading marks %q, render writes %q", assemble.HeadingMarkPrefix, render.HeadingMarkPrefix)
	}
	if assemble.AnchorPrefix != render.AnchorPrefix {
		t.Fatalf("assemble reads %q, render writes %q", assemble.AnchorPrefix, render.AnchorPrefix)
	}
	if assemble.UndeterminedLang != render.UndeterminedLang {
		t.Fatalf("assemble reads %q, render writes %q", assemble.UndeterminedLang, render.UndeterminedLang)
	}
}

// FuzzInspect: whatever a file holds, reading it returns an error or an
// answer, never a panic or an endless loop.
func FuzzInspect(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "chapter.pdf"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add(bytes.ReplaceAll(seed, []byte("/Kids ["), []byte("/Kids [1 0 R ")))
	f.Add([]byte("%PDF-1.4\nxref\n0 99999999\ntrailer\n<</Root 1 0 R>>\nstartxref\n9\n%%EOF"))
	f.Add([]byte("%PDF-1.4\n1 0 obj\n" + strings.Repeat("[", 10000) + "\nendobj\nstartxref\n9\n%%EOF"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in.pdf")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		info, err := assemble.Inspect(path)
		if err == nil && info.Pages < 0 {
			t.Fatalf("negative page count")
		}
		_, _ = assemble.Assemble(context.Background(), io.Discard, []assemble.Part{{Path: path, Chapter: 0}}, assemble.Options{Outline: true})
	})
}
