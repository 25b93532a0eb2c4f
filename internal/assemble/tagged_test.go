package assemble_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/assemble"
	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
)

// TestAssemble_TaggedNodeDocs: three tagged pages of the Node.js docs
// become one structure tree, a Part per chapter under one Document, whose
// marked content, parent tree and links the checker finds whole; the
// anchor marks the assembly removes leave no reference behind. Each
// conformance level adds what it claims.
func TestAssemble_TaggedNodeDocs(t *testing.T) {
	dir := t.TempDir()
	pages := []string{"dns.html", "assert.html", "punycode.html"}
	parts, _ := printChapters(t, dir, pages...)
	var outline []int // outline entries beneath each chapter, which Chromium makes of its headings
	for _, p := range parts {
		info, err := assemble.Inspect(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		outline = append(outline, countHeadings(info.Outline))
	}
	for _, tc := range []struct {
		name string
		opts assemble.Options
		want pdfcheck.Want
	}{
		{"tagged", assemble.Options{Tagged: true}, pdfcheck.Want{}},
		{"pdf_ua", assemble.Options{Conformance: assemble.Conformance{UA: true}}, pdfcheck.Want{UA: true}},
		{"pdf_a and pdf_ua", assemble.Options{Conformance: assemble.Conformance{UA: true, PDFA: "2b"}}, pdfcheck.Want{UA: true, PDFA: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Title, tc.opts.Outline = "Node.js & friends", true
			out := filepath.Join(t.TempDir(), "manual.pdf")
			st := assembleTo(t, out, parts, tc.opts)
			if out, err := exec.Command("qpdf", "--check", out).CombinedOutput(); err != nil {
				t.Fatalf("qpdf --check: %v\n%s", err, out)
			}
			rep, err := pdfcheck.Check(context.Background(), out, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Problems {
				t.Error(p)
			}
			if rep.Pages != st.Pages || rep.MarkedContent == 0 || rep.Links == 0 || rep.Lang != "en" {
				t.Errorf("checked %d pages (want %d), %d marked-content sequences, %d links, lang %q", rep.Pages, st.Pages, rep.MarkedContent, rep.Links, rep.Lang)
			}
			if len(rep.PartTitles) != len(pages) {
				t.Fatalf("%d Parts under the Document, want %d:\n%s", len(rep.PartTitles), len(pages), rep.Tree)
			}
			for i, title := range rep.PartTitles {
				if !strings.Contains(title, "Node.js") || rep.Headings[i] != outline[i] {
					t.Errorf("Part %d %q holds %d headings; want the chapter's title and its %d outline entries", i, title, rep.Headings[i], outline[i])
				}
			}
			if !strings.HasPrefix(rep.Tree, "Document (page 1)\n  Part \"DNS") {
				t.Errorf("the tree does not read Document, then the first chapter:\n%.600s", rep.Tree)
			}
			if tc.want.UA {
				t.Logf("findings: %v", st.Findings)
			}
		})
	}
	t.Run("untagged assembly fails the checker", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "manual.pdf")
		assembleTo(t, out, parts, assemble.Options{Title: "Node.js", Outline: true})
		rep, err := pdfcheck.Check(context.Background(), out, pdfcheck.Want{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) == 0 {
			t.Fatal("the checker passed a manual whose structure trees were dropped")
		}
	})
}

func countHeadings(hs []assemble.Heading) int {
	n := len(hs)
	for _, h := range hs {
		n += countHeadings(h.Children)
	}
	return n
}

func assembleTo(t *testing.T, path string, parts []assemble.Part, opts assemble.Options) assemble.Stats {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := assemble.Assemble(context.Background(), f, parts, opts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}
