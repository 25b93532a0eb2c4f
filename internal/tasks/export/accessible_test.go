package export_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
)

// overlayForm is the form the assembly draws the running headers and
// footers with (internal/assemble).
const overlayForm = "PdxOverlay"

// TestManual_AccessibleManuals: tagged manuals from chapters, with their
// table of contents and a footer drawn over every page, pass the
// structure checker: the sample manual as PDF/UA and PDF/A-2b, and the
// linked site's chapters with a language given and a chapter that lacks
// what PDF/UA needs, which the export's warnings name.
func TestManual_AccessibleManuals(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	sample, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "examples", "manual.html"))
	if err != nil {
		t.Fatal(err)
	}
	site := startChapterSite(t)
	e := startManualEnv(t, site, 2, 2)
	footer := `<div style="font-size:9px;text-align:center;width:100%">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>`
	margins := &exportclient.Margins{Bottom: new(15.0)}
	lacking := `<!doctype html><html><head><title>Lacking</title></head><body><h1>Figures</h1><h3>Too deep</h3>
<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==" width="40" height="40"></body></html>`
	for _, tc := range []struct {
		name     string
		req      exportclient.Request
		want     pdfcheck.Want
		parts    int    // Parts under the Document: the contents and the chapters
		lang     string // the catalog's
		warnings []string
	}{
		{"sample manual as PDF/UA and PDF/A-2b", exportclient.Request{ManualID: "sample", Version: "1",
			Chapters: []exportclient.Chapter{{HTML: string(sample), Title: "Administrator manual"}},
			Options: exportclient.Options{Outline: true, TOC: true, FooterHTML: footer, MarginMM: margins, PDFUA: true, PDFA: "2b",
				WaitFor: "window.__PDF_READY__===true"}},
			pdfcheck.Want{UA: true, PDFA: true, Artifact: overlayForm}, 2, "en", nil},
		{"linked chapters, tagged, in British English", exportclient.Request{ManualID: "site", Version: "1",
			Chapters: []exportclient.Chapter{{URL: site.url("intro.html"), Revision: "a"}, {URL: site.url("guide.html"), Revision: "a"},
				{URL: site.url("reference.html"), Revision: "a"}, {HTML: lacking}},
			Options: exportclient.Options{Outline: true, TOC: true, FooterHTML: footer, MarginMM: margins, PDFUA: true, Lang: "en-GB"}},
			pdfcheck.Want{UA: true, Artifact: overlayForm}, 5, "en-GB",
			[]string{"source.chapters[3]: Figure: an image without alternative text", "source.chapters[3]: H3: a heading level skipped: H3 after H1", "source.chapters[3]: no language"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := e.export(t, tc.req)
			if st.State != "completed" {
				t.Fatalf("export: %s %s", st.State, st.Error)
			}
			path := e.artifact(st)
			rep, err := pdfcheck.Check(context.Background(), path, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Problems {
				t.Error(p)
			}
			if len(rep.PartTitles) != tc.parts || rep.PartTitles[0] != "Contents" || rep.Lang != tc.lang || rep.MarkedContent == 0 {
				t.Errorf("Parts %q (want the contents and %d chapters), lang %q (want %q), %d marked-content sequences:\n%s",
					rep.PartTitles, tc.parts-1, rep.Lang, tc.lang, rep.MarkedContent, rep.Tree)
			}
			for i, n := range rep.Headings[1:] {
				if n == 0 {
					t.Errorf("chapter %d's Part holds no heading:\n%s", i, rep.Tree)
				}
			}
			nav := readNav(t, path)
			if len(nav.outline) != tc.parts {
				t.Errorf("outline: %d top entries, want one for the contents and each chapter", len(nav.outline))
			}
			internal := 0
			for _, l := range nav.links {
				if l.toPage > 0 {
					internal++
				}
			}
			if internal == 0 {
				t.Error("no internal link kept")
			}
			var got []string
			for _, w := range st.Result.Warnings {
				if w.Kind == "accessibility" {
					got = append(got, w.Message)
				}
			}
			for _, w := range tc.warnings {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("no warning %q among %q", w, got)
				}
			}
			if tc.warnings == nil && len(got) > 0 {
				t.Logf("accessibility warnings of the sample manual: %q", got)
			}
		})
	}
}
