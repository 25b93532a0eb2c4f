package assemble

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// Part is one PDF of the manual, in order.
type Part struct {
	Path string // the PDF, a local file
	// Title is the part's outline entry: "" takes the PDF's own title, and
	// NoEntry leaves the part out of the outline (a table of contents).
	Title   string
	NoEntry bool
	// URL is the canonical URL the part was printed from (spec.CanonicalURL,
	// without fragment): links to it become links inside the manual.
	URL string
	// Chapter is the index ChapterURL names the part by; -1 for none.
	Chapter int
}

// Options shape the manual.
type Options struct {
	Title   string // the document's title (its Info dictionary)
	Outline bool   // write the outline
	// Overlay is a PDF with one page for every page of the manual, drawn
	// over that page: the running headers and footers, which count the
	// manual's pages, printed as one sheet. "": none.
	Overlay string
	// Tagged keeps the parts' structure trees as one (structure.go) and
	// marks the overlay as an artifact: an accessible manual from the
	// tagged PDFs of its parts.
	Tagged bool
	// Lang is the document's language (BCP 47); "" takes the first
	// part's. Tagged only.
	Lang string
	// Conformance says what the file claims in its XMP metadata, and what
	// it needs for the claim (conformance.go).
	Conformance Conformance
	// Analysis is what Analyze read of some of the parts (by path), which
	// they are not read for again; nil: every part is read here. An
	// Analysis serves one Assemble.
	Analysis *Analysis
}

// Stats describe an assembled manual.
type Stats struct {
	Pages int
	// FirstPage is each part's first page, 1-based.
	FirstPage []int
	// OutlineEntries counts every entry written, chapters' included.
	OutlineEntries int
	// InternalLinks counts the links to another part (or to a place of
	// its own that only an anchor mark named) made internal.
	InternalLinks int
	// Bytes is the size of the file written.
	Bytes int64
	// Findings are what an accessible manual lacks that its parts did
	// not have (Conformance.UA only).
	Findings []Finding
}

// Assemble writes the manual made of parts to out: it reads every part
// (analyzeAll), numbers the manual's pages (numberPages), copies each
// part's pages into the file (copyParts), then writes what belongs to
// the whole document (writeDocument).
func Assemble(ctx context.Context, out io.Writer, parts []Part, opts Options) (Stats, error) {
	if len(parts) == 0 {
		return Stats{}, errors.New("assemble: no parts")
	}
	opts.Tagged = opts.Tagged || opts.Conformance.UA
	analyzed, err := analyzeAll(ctx, parts, opts.Analysis)
	if err != nil {
		return Stats{}, err
	}
	keepXrefs(analyzed)
	m, err := newManual(analyzed)
	if err != nil {
		return Stats{}, err
	}
	if m.w, err = newWriter(out); err != nil {
		return Stats{}, err
	}
	if opts.Overlay != "" {
		ov, err := openOverlay(opts.Overlay, m.w, m.pageCount(), opts.Tagged)
		if err != nil {
			return Stats{}, fmt.Errorf("overlay: %w", err)
		}
		defer ov.r.Close()
		m.overlay = ov
	}
	st := Stats{FirstPage: m.numberPages(opts.Tagged)}
	if err := m.copyParts(ctx, opts.Conformance.UA); err != nil {
		return Stats{}, err
	}
	if st.OutlineEntries, err = m.writeDocument(opts); err != nil {
		return Stats{}, err
	}
	st.Pages = len(m.pageNums)
	st.InternalLinks = m.internalLinks
	st.Bytes = m.w.n
	st.Findings = m.findings
	return st, nil
}

// newManual indexes the analyzed parts by the URL and the chapter number
// links name them by; a URL two parts share names the first of them.
func newManual(parts []*analyzed) (*manual, error) {
	m := &manual{byURL: map[string]int{}, byChapter: map[int]int{}}
	for i, a := range parts {
		if len(a.pages) == 0 {
			return nil, fmt.Errorf("part %d: %w: no pages", i, ErrMalformed)
		}
		m.parts = append(m.parts, a)
		if a.URL != "" {
			if _, dup := m.byURL[a.URL]; !dup {
				m.byURL[a.URL] = i
			}
		}
		if a.Chapter >= 0 {
			m.byChapter[a.Chapter] = i
		}
	}
	return m, nil
}

// pageCount is the number of pages of the manual.
func (m *manual) pageCount() int {
	total := 0
	for _, a := range m.parts {
		total += len(a.pages)
	}
	return total
}

// numberPages gives the page tree, the structure tree (tagged) and every
// page its object number before any part is copied: a link or an outline
// entry may point at a page of a part not yet written. It returns each
// part's first page, 1-based.
func (m *manual) numberPages(tagged bool) (firstPage []int) {
	m.pagesRoot = m.w.alloc()
	if tagged {
		m.tree = &structTree{root: m.w.alloc(), doc: m.w.alloc()}
	}
	for _, a := range m.parts {
		first := len(m.pageNums)
		firstPage = append(firstPage, first+1)
		nums := make([]int, len(a.pages))
		for i := range a.pages {
			nums[i] = m.w.alloc()
		}
		m.pageNums = append(m.pageNums, nums...)
		m.partFirst = append(m.partFirst, first)
	}
	return firstPage
}

// copyParts copies every part, in order, stopping when ctx ends; audit
// looks for what an accessible document needs and a part lacks.
func (m *manual) copyParts(ctx context.Context, audit bool) error {
	for i := range m.parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.copyPart(i, audit); err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
	}
	return nil
}

// manual is the state of one Assemble.
type manual struct {
	w             *writer
	parts         []*analyzed
	byURL         map[string]int // canonical URL → part
	byChapter     map[int]int    // ChapterURL index → part
	pagesRoot     int
	overlay       *overlay
	pageNums      []int // the new object number of every page, in order
	partFirst     []int // index in pageNums of each part's first page
	internalLinks int
	tree          *structTree // nil: untagged
	findings      []Finding
}
