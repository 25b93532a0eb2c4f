package assemble

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestHeadingOf: a heading mark's URI as this release prints it (the text
// and each carried id escaped on their own) and as an earlier one did (the
// whole escaped at once).
func TestHeadingOf(t *testing.T) {
	for _, c := range []struct {
		name, uri string
		ok        bool
		want      headingMark
	}{
		{"text only", HeadingMarkPrefix + "0/1?Intro", true, headingMark{n: 0, level: 1, title: "Intro"}},
		{"escaped text", HeadingMarkPrefix + "3/2?a%2Fb%3Fc%26d%2C%20e+f", true, headingMark{n: 3, level: 2, title: "a/b?c&d, e+f"}},
		{"carried ids", HeadingMarkPrefix + "7/3?Deep&deep-section,a%2Cb,%C3%A9t%C3%A9", true,
			headingMark{n: 7, level: 3, title: "Deep", anchors: []string{"deep-section", "a,b", "été"}}},
		{"no ids after &", HeadingMarkPrefix + "1/2?T&", true, headingMark{n: 1, level: 2, title: "T"}},
		{"earlier release", HeadingMarkPrefix + "2/4/a%2Fb c", true, headingMark{n: 2, level: 4, title: "a/b c"}},
		{"earlier release, & in the text", HeadingMarkPrefix + "2/4/x%26y", true, headingMark{n: 2, level: 4, title: "x&y"}},
		{"empty text", HeadingMarkPrefix + "1/2?", false, headingMark{}},
		{"level 7", HeadingMarkPrefix + "1/7?T", false, headingMark{}},
		{"no level", HeadingMarkPrefix + "1?T", false, headingMark{}},
		{"bad escape", HeadingMarkPrefix + "1/2?%zz", false, headingMark{}},
		{"an anchor mark", AnchorPrefix + "deep-section", false, headingMark{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := headingOf(c.uri)
			if ok != c.ok || got.n != c.want.n || got.level != c.want.level || got.title != c.want.title || !slices.Equal(got.anchors, c.want.anchors) {
				t.Errorf("headingOf(%q) = %+v, %t; want %+v, %t", c.uri, got, ok, c.want, c.ok)
			}
		})
	}
}

// carriedPage puts each target on a page of its own (breaks before each
// "p" class), so that where its anchor lands names the element.
const carriedPage = `<!doctype html><html><head><style>.p { break-before: page }</style></head><body>
<h1>Carried anchors</h1>
<h2 class="p" id="own">Own id</h2>
<h2 class="p">Ids inside <a id="inside"></a><span style="display:none"><a id="hidden-inside">#</a></span></h2>
<section class="p" id="opens">
  <h2>Section that opens with its heading</h2>
</section>
<div class="p" id="text-first">Text before the heading<h3 class="p">Heading after text</h3></div>
<p class="p" id="plain">A paragraph with an id</p>
<p class="p" id="twice">The first element with this id</p>
<h2 class="p" id="twice">A heading with the same id</h2>
<p class="p"><a name="named"></a>An a name</p>
</body></html>`

// TestRender_HeadingMarksCarryAnchors: a chapter printed with both kinds
// of marks lands every id where its element was printed, whether a
// heading's mark carries it (the heading's own id, the ids inside it, a
// section that opens with it) or it has a mark of its own (an element with
// text before its heading, an element that is no heading's, the first of
// two elements with one id), and only the ids no heading carries get
// marks of their own; a heading holding more ids than its mark's URL may
// carry gives the rest marks of their own.
func TestRender_HeadingMarksCarryAnchors(t *testing.T) {
	// /many: a heading holding more ids than its mark's URL may carry.
	var many strings.Builder
	many.WriteString("<!doctype html><h1>Many ids")
	const manyIDs = 3000
	for i := range manyIDs {
		fmt.Fprintf(&many, `<a id="an-id-long-enough-to-fill-the-mark-%04d"></a>`, i)
	}
	many.WriteString("</h1>")
	r, base := StartSite(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if req.URL.Path == "/many" {
			_, _ = io.WriteString(w, many.String())
			return
		}
		_, _ = io.WriteString(w, carriedPage)
	}))
	print := func(page string, headings bool) *analyzed {
		t.Helper()
		path := filepath.Join(t.TempDir(), "chapter.pdf")
		settings := spec.Options{Outline: true}.Settings()
		settings.Outline, settings.Tagged = false, false // as a chapter with heading marks prints
		_, err := r.Render(context.Background(), render.Source{URL: base + page, MarkAnchors: true, MarkHeadings: headings}, settings,
			testsupport.FileSink(path))
		if err != nil {
			t.Fatal(err)
		}
		a, err := analyze(Part{Path: path, Chapter: -1})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// 0-based pages: the title's, then one per "p" element in order.
	want := map[string]int{"own": 1, "inside": 2, "hidden-inside": 2, "opens": 3, "text-first": 4, "plain": 6, "twice": 7, "named": 9}
	marks := func(a *analyzed) (n int) {
		for _, w := range a.marks {
			for ; w != 0; w &= w - 1 {
				n++
			}
		}
		return n
	}
	with, without := print("", true), print("", false)
	if len(with.pages) != 10 {
		t.Fatalf("%d pages, want 10 (the test needs a page per target)", len(with.pages))
	}
	for id, page := range want {
		if id == "hidden-inside" {
			if _, ok := without.anchors[id]; ok {
				t.Errorf("without heading marks, the hidden element %q has a printed mark", id)
			}
		} else if got := without.named(id); got == nil || got.page != page {
			t.Errorf("without heading marks, anchor %q lands on %v, want page %d", id, got, page)
		}
		if got := with.named(id); got == nil || got.page != page {
			t.Errorf("with heading marks, anchor %q lands on %v, want page %d", id, got, page)
		}
	}
	if len(with.outline) == 0 {
		t.Fatal("no outline from the heading marks")
	}
	// 6 headings (the title's and five "p" ones); of the ids,
	// text-first, plain, twice (the paragraph) and named keep marks of
	// their own.
	if got := marks(with); got != 6+4 {
		t.Errorf("%d marks with heading marks, want %d: 6 headings and 4 ids no heading carries", got, 6+4)
	}
	if got := marks(without); got != 7 {
		t.Errorf("%d marks without heading marks, want 7: one per printed id (the hidden one and the second twice none)", got)
	}

	// The ids past what the heading's mark may carry get marks of their
	// own: every one lands, and the mark stays a link Chromium prints.
	full := print("many", true)
	for i := range manyIDs {
		if id := fmt.Sprintf("an-id-long-enough-to-fill-the-mark-%04d", i); full.named(id) == nil {
			t.Fatalf("anchor %q of the heading with many ids was lost", id)
		}
	}
	if len(full.outline) != 1 {
		t.Fatalf("the heading with many ids has %d outline entries, want 1 (its mark printed)", len(full.outline))
	}
	if got := marks(full); got <= 1 || got >= manyIDs {
		t.Errorf("%d marks for a heading with %d ids: want the mark to carry some and the rest to have their own", got, manyIDs)
	}
}
