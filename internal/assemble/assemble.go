package assemble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// Assemble writes the manual made of parts to out.
func Assemble(ctx context.Context, out io.Writer, parts []Part, opts Options) (Stats, error) {
	if len(parts) == 0 {
		return Stats{}, errors.New("assemble: no parts")
	}
	opts.Tagged = opts.Tagged || opts.Conformance.UA
	m := &manual{byURL: map[string]int{}, byChapter: map[int]int{}}
	analyzed, err := analyzeAll(ctx, parts, opts.Analysis)
	if err != nil {
		return Stats{}, err
	}
	keepXrefs(analyzed)
	for i, p := range parts {
		a := analyzed[i]
		if len(a.pages) == 0 {
			return Stats{}, fmt.Errorf("part %d: %w: no pages", i, ErrMalformed)
		}
		m.parts = append(m.parts, a)
		if p.URL != "" {
			if _, dup := m.byURL[p.URL]; !dup {
				m.byURL[p.URL] = i
			}
		}
		if p.Chapter >= 0 {
			m.byChapter[p.Chapter] = i
		}
	}
	total := 0
	for _, a := range m.parts {
		total += len(a.pages)
	}
	w, err := newWriter(out)
	if err != nil {
		return Stats{}, err
	}
	m.w = w
	if opts.Overlay != "" {
		ov, err := openOverlay(opts.Overlay, w, total, opts.Tagged)
		if err != nil {
			return Stats{}, fmt.Errorf("overlay: %w", err)
		}
		defer ov.r.Close()
		m.overlay = ov
	}
	m.pagesRoot = w.alloc()
	if opts.Tagged {
		m.tree = &structTree{root: w.alloc(), doc: w.alloc()}
	}
	st := Stats{}
	for _, a := range m.parts {
		first := len(m.pageNums)
		st.FirstPage = append(st.FirstPage, first+1)
		nums := make([]int, len(a.pages))
		for i := range a.pages {
			nums[i] = w.alloc()
		}
		m.pageNums = append(m.pageNums, nums...)
		m.partFirst = append(m.partFirst, first)
	}
	for i := range m.parts {
		if err := ctx.Err(); err != nil {
			return Stats{}, err
		}
		if err := m.copyPart(i, opts.Conformance.UA); err != nil {
			return Stats{}, fmt.Errorf("part %d: %w", i, err)
		}
	}
	lang := opts.Lang
	if m.tree != nil {
		if lang == "" {
			lang = m.tree.lang
		}
		if lang == "" {
			lang = UndeterminedLang // said, rather than not: PDF/UA asks for one
		}
		if err := m.writeStructure(lang); err != nil {
			return Stats{}, err
		}
	}
	kids := make(array, len(m.pageNums))
	for i, n := range m.pageNums {
		kids[i] = ref{n, 0}
	}
	pages := &dict{}
	pages.set("Type", name("Pages"))
	pages.set("Kids", kids)
	pages.set("Count", number(strconv.Itoa(len(kids))))
	if err := w.object(m.pagesRoot, pages); err != nil {
		return Stats{}, err
	}
	catalog := &dict{}
	catalog.set("Type", name("Catalog"))
	catalog.set("Pages", ref{m.pagesRoot, 0})
	if opts.Outline {
		root, n, err := m.writeOutline()
		if err != nil {
			return Stats{}, err
		}
		if root > 0 {
			catalog.set("Outlines", ref{root, 0})
			catalog.set("PageMode", name("UseOutlines"))
		}
		st.OutlineEntries = n
	}
	if m.tree != nil {
		catalog.set("StructTreeRoot", ref{m.tree.root, 0})
		markInfo := &dict{}
		markInfo.set("Marked", keyword("true"))
		catalog.set("MarkInfo", markInfo)
		if lang != "" {
			catalog.set("Lang", textString(lang))
		}
		prefs := &dict{}
		prefs.set("DisplayDocTitle", keyword("true"))
		catalog.set("ViewerPreferences", prefs)
	}
	if opts.Tagged || opts.Conformance.claims() {
		meta, err := writeMetadata(w, opts.Title, producer, opts.Conformance)
		if err != nil {
			return Stats{}, err
		}
		catalog.set("Metadata", ref{meta, 0})
	}
	if opts.Conformance.PDFA != "" {
		intent, err := writeOutputIntent(w)
		if err != nil {
			return Stats{}, err
		}
		catalog.set("OutputIntents", array{ref{intent, 0}})
	}
	catalogNum := w.alloc()
	if err := w.object(catalogNum, catalog); err != nil {
		return Stats{}, err
	}
	info := &dict{}
	if opts.Title != "" {
		info.set("Title", textString(opts.Title))
	}
	info.set("Producer", textString(producer))
	infoNum := w.alloc()
	if err := w.object(infoNum, info); err != nil {
		return Stats{}, err
	}
	if err := w.finish(catalogNum, infoNum); err != nil {
		return Stats{}, err
	}
	st.Pages = len(m.pageNums)
	st.InternalLinks = m.internalLinks
	st.Bytes = w.n
	st.Findings = m.findings
	return st, nil
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

// producer is the Info dictionary's and the XMP metadata's /Producer.
const producer = "pdfexport"
