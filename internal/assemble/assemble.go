// Package assemble builds one manual from the PDFs of its chapters, file
// to file: the chapters' pages in order, an outline with one entry per
// chapter and the chapter's own headings beneath it, and links between
// chapters turned into links inside the document.
//
// It reads what Chromium prints (see pdf.go) and writes a new file object
// by object, copying content streams, fonts and images from the chapter
// files without decoding them. What it holds in memory is per page and per
// link target (numbers, not content), so a 1,400-page manual costs about
// what a 20-page one does.
//
// Link targets: Chromium writes a named destination only for elements a
// link of the same page points at, so the renderer marks every element
// that has an id with an empty 1×1 link to AnchorURL(id) (render.Source's
// MarkAnchors). Its annotation says on which page and where the element
// was printed; Assemble reads those positions, removes the marks, and
// points every link to chapter j (its URL, with or without a fragment) at
// the page and place of that element, or at j's first page.
package assemble

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// AnchorPrefix starts the URL of an anchor mark; .invalid is a name that
// never resolves (RFC 6761), so a mark can never be a real link.
const AnchorPrefix = "https://anchor.pdfexport.invalid/"

// HeadingMarkPrefix starts the URL of a heading mark: an anchor mark
// whose escaped id starts with NUL (no element's id can), then
// "h/<n>/<level>?<text>", and "&<id>,<id>…" for the anchors the mark
// carries (each part escaped); an earlier release printed
// "h/<n>/<level>/<text>". A chapter printed without Chromium's outline
// carries one per heading; its outline is built from them
// (outlineOfHeadings), and they are dropped with the anchor marks.
const HeadingMarkPrefix = AnchorPrefix + "%00h/"

// ChapterURL is the URL a generated page (the table of contents) links
// chapter i (0-based) with; Assemble turns it into a link to the chapter.
func ChapterURL(i int) string { return "https://chapter.pdfexport.invalid/" + strconv.Itoa(i) }

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

// Info is what Inspect reads of one PDF.
type Info struct {
	Pages int
	Title string // the Info dictionary's /Title, "" if none
	Lang  string // the catalog's /Lang, "" if none
	// Outline is the PDF's own outline, its top level.
	Outline []Heading
}

// Heading is an outline entry.
type Heading struct {
	Title    string
	Page     int // 1-based, within the PDF; 0 when it points nowhere
	Children []Heading
}

// Inspect reads the page count, title and outline of one PDF.
func Inspect(path string) (Info, error) {
	p, err := analyze(Part{Path: path, Chapter: -1})
	if err != nil {
		return Info{}, err
	}
	return p.info(), nil
}

// info is what Inspect tells of a.
func (a *analyzed) info() Info {
	info := Info{Pages: len(a.pages), Title: a.title, Lang: a.lang}
	var conv func(items []*outlineItem) []Heading
	conv = func(items []*outlineItem) []Heading {
		var hs []Heading
		for _, it := range items {
			h := Heading{Title: it.title}
			if it.dest != nil {
				h.Page = it.dest.page + 1
			}
			h.Children = conv(it.children)
			hs = append(hs, h)
		}
		return hs
	}
	info.Outline = conv(a.outline)
	return info
}

// Analysis is what Analyze read of a manual's parts, which Assemble
// reuses (Options.Analysis): a manual with a table of contents needs its
// chapters' page counts before it is assembled, and each chapter is then
// read once, not twice.
type Analysis struct {
	byPath map[string]*analyzed
}

// PartError is the error of the part at index Part.
type PartError struct {
	Part int
	Err  error
}

func (e *PartError) Error() string { return "part " + strconv.Itoa(e.Part) + ": " + e.Err.Error() }
func (e *PartError) Unwrap() error { return e.Err }

// Analyze reads the parts, several at once (inParallel): what Inspect
// tells of each, in the parts' order, and the analysis for Assemble. The
// error is a *PartError, the first bad part's in the parts' order.
func Analyze(ctx context.Context, parts []Part) (*Analysis, []Info, error) {
	read, err := analyzeAll(ctx, parts, nil)
	if err != nil {
		return nil, nil, err
	}
	an := &Analysis{byPath: make(map[string]*analyzed, len(parts))}
	infos := make([]Info, len(parts))
	for i, a := range read {
		infos[i] = a.info()
		an.byPath[a.Path] = a
	}
	return an, infos, nil
}

// target is a place in a part: a page (0-based, within the part) and the
// top-left of what is shown there.
type target struct {
	page      int
	left, top number
}

type outlineItem struct {
	title    string
	dest     *target
	children []*outlineItem
}

// analyzed is what the first pass reads of a part.
type analyzed struct {
	Part
	title   string
	lang    string
	pages   []pageRef
	anchors map[string]target // element id → where it was printed
	dests   map[string]target // the PDF's own named destinations
	outline []*outlineItem
	xref    xref // the file's cross-reference, which copyPart reads the file by again
	// marks has bit n set when object n is an anchor or heading mark,
	// which copyPart drops without reading it again.
	marks []uint64
}

func (a *analyzed) setMark(n int) {
	if w := n / 64; w >= len(a.marks) {
		a.marks = append(a.marks, make([]uint64, w+1-len(a.marks))...)
	}
	a.marks[n/64] |= 1 << (n % 64)
}

func (a *analyzed) isMark(n int) bool {
	return n/64 < len(a.marks) && a.marks[n/64]&(1<<(n%64)) != 0
}

// pageRef is a page object and what it inherits from the page tree.
type pageRef struct {
	num      int
	inherit  *dict // Resources, MediaBox, CropBox, Rotate from ancestors
	mediaTop number
}

// top is the page's top edge, where a link to the page itself lands.
func (p pageRef) top() number {
	if p.mediaTop != "" {
		return p.mediaTop
	}
	return "null"
}

// maxOutlineDepth and maxOutlineEntries bound what a hostile chapter's
// outline can cost.
const (
	maxOutlineDepth   = 16
	maxOutlineEntries = 100000
	maxPageTreeDepth  = 32
)

func analyze(part Part) (*analyzed, error) {
	r, err := openPDF(part.Path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	a := &analyzed{Part: part, anchors: map[string]target{}, dests: map[string]target{}, xref: r.xref()}
	if info, err := r.dict(r.trailer.get("Info")); err == nil && info != nil {
		if t, ok := info.get("Title").(str); ok {
			a.title = t.text()
		}
	}
	root, err := r.dict(r.trailer.get("Root"))
	if err != nil || root == nil {
		return nil, fmt.Errorf("%w: %s: no catalog", ErrMalformed, part.Path)
	}
	if l, ok := root.get("Lang").(str); ok {
		a.lang = l.text()
	}
	if err := a.walkPages(r, root.get("Pages"), &dict{}, 0, map[int]bool{}); err != nil {
		return nil, fmt.Errorf("%s: %w", part.Path, err)
	}
	pageIndex := make(map[int]int, len(a.pages))
	for i, p := range a.pages {
		pageIndex[p.num] = i
	}
	var headings []headingMark
	for i, p := range a.pages {
		page, err := r.dict(ref{p.num, 0})
		if err != nil {
			return nil, err
		}
		annots, err := r.array(page.get("Annots"))
		if err != nil {
			return nil, err
		}
		for _, av := range annots {
			an, err := r.dict(av)
			if err != nil {
				return nil, err
			}
			if id, uri, ok := anchorOf(r, an); ok {
				if rf, ok := av.(ref); ok {
					a.setMark(rf.num)
				}
				if h, isHeading := headingOf(uri); isHeading {
					for _, id := range h.anchors {
						a.anchor(id, rectTarget(i, an))
					}
					if len(headings) < maxOutlineEntries {
						h.dest = rectTarget(i, an)
						headings = append(headings, h)
					}
					continue
				}
				a.anchor(id, rectTarget(i, an))
			}
		}
	}
	if dests, err := r.dict(root.get("Dests")); err == nil && dests != nil {
		for k, key := range dests.keys {
			if t, ok := explicitTarget(r, dests.vals[k], pageIndex); ok {
				a.dests[decodeName(key)] = t
			}
		}
	}
	if outlines, err := r.dict(root.get("Outlines")); err == nil && outlines != nil {
		a.outline, err = readOutline(r, outlines.get("First"), pageIndex, a, 0, map[int]bool{})
		if err != nil {
			return nil, fmt.Errorf("%s: outline: %w", part.Path, err)
		}
	}
	if a.outline == nil {
		a.outline = outlineOfHeadings(headings)
	}
	return a, nil
}

// analyzeAll analyzes the parts (inParallel), but those that done holds,
// which it takes (done may be nil). The error is a *PartError, the first
// bad part's in the parts' order.
func analyzeAll(ctx context.Context, parts []Part, done *Analysis) ([]*analyzed, error) {
	out := make([]*analyzed, len(parts))
	errs := make([]error, len(parts))
	var todo []int
	for i, p := range parts {
		if a := done.take(p.Path); a != nil {
			a.Part = p
			out[i] = a
			continue
		}
		todo = append(todo, i)
	}
	inParallel(ctx, len(todo), func(k int) {
		i := todo[k]
		out[i], errs[i] = analyze(parts[i])
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, &PartError{Part: i, Err: err}
		}
	}
	return out, nil
}

// take returns the analysis of the part at path, once (nil: none).
func (an *Analysis) take(path string) *analyzed {
	if an == nil {
		return nil
	}
	a := an.byPath[path]
	delete(an.byPath, path)
	return a
}

// maxKeptXrefEntries bounds the cross-reference entries the parts keep
// from their analysis to their copy, 8 bytes each: past it (a manual of
// many long tagged chapters), every part's is read again when it is
// copied, as its analysis read it.
var maxKeptXrefEntries = 4 << 20

// keepXrefs drops what the parts kept of their cross-references when
// together they pass maxKeptXrefEntries.
func keepXrefs(parts []*analyzed) {
	n := 0
	for _, a := range parts {
		n += len(a.xref.offsets)
	}
	if n <= maxKeptXrefEntries {
		return
	}
	for _, a := range parts {
		a.xref = xref{}
	}
}

// inParallel calls f for 0 to n-1, as many at once as Go has processors:
// a manual's assembly waits for all of its parts, each a file of its own.
// It stops handing out indexes when ctx ends.
func inParallel(ctx context.Context, n int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

// headingMark is a heading mark read from a page: its place in the
// document, its level and text, the ids of the anchors it carries, and
// where it was printed.
type headingMark struct {
	n, level int
	title    string
	anchors  []string
	dest     target
}

// maxHeadingTitle bounds the title an outline entry takes from a heading
// mark, in characters: the renderer's bound.
const maxHeadingTitle = 300

// headingOf parses the URI of a heading mark (HeadingMarkPrefix), its
// escapes kept: the parts are unescaped one by one, since a text or an id
// may hold any character.
func headingOf(uri string) (headingMark, bool) {
	rest, ok := strings.CutPrefix(uri, HeadingMarkPrefix)
	if !ok {
		return headingMark{}, false
	}
	var h headingMark
	var place, title string
	if p, query, ok := strings.Cut(rest, "?"); ok {
		text, ids, _ := strings.Cut(query, "&")
		var err error
		if title, err = url.PathUnescape(text); err != nil {
			return headingMark{}, false
		}
		for e := range strings.SplitSeq(ids, ",") {
			if id, err := url.PathUnescape(e); err == nil && id != "" {
				h.anchors = append(h.anchors, id)
			}
		}
		place = p
	} else {
		// An earlier release's: "<n>/<level>/<text>", unescaped whole.
		whole, err := url.PathUnescape(rest)
		if err != nil {
			return headingMark{}, false
		}
		var found bool
		if place, title, found = splitPlace(whole); !found {
			return headingMark{}, false
		}
	}
	ns, ls, ok := strings.Cut(place, "/")
	if !ok {
		return headingMark{}, false
	}
	var err1, err2 error
	h.n, err1 = strconv.Atoi(ns)
	h.level, err2 = strconv.Atoi(ls)
	if err1 != nil || err2 != nil || h.n < 0 || h.level < 1 || h.level > 6 || title == "" {
		return headingMark{}, false
	}
	if r := []rune(title); len(r) > maxHeadingTitle { // the renderer's bound; a page's own mark may pass it
		title = string(r[:maxHeadingTitle])
	}
	h.title = title
	return h, true
}

// splitPlace splits "<n>/<level>/<text>" into "<n>/<level>" and the text,
// which may hold slashes.
func splitPlace(s string) (place, text string, ok bool) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0] + "/" + parts[1], parts[2], true
}

// outlineOfHeadings is the outline a page's headings make, in document
// order: each under the last heading before it of a lower level, as
// Chromium nests its own outline.
func outlineOfHeadings(marks []headingMark) []*outlineItem {
	slices.SortStableFunc(marks, func(a, b headingMark) int { return cmp.Compare(a.n, b.n) })
	type open struct {
		level int
		item  *outlineItem
	}
	var top []*outlineItem
	var stack []open
	for _, m := range marks {
		it := &outlineItem{title: m.title, dest: &m.dest}
		for len(stack) > 0 && stack[len(stack)-1].level >= m.level {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			top = append(top, it)
		} else {
			parent := stack[len(stack)-1].item
			parent.children = append(parent.children, it)
		}
		stack = append(stack, open{m.level, it})
	}
	return top
}

// inheritable are the page attributes a page takes from its ancestors.
var inheritable = []name{"Resources", "MediaBox", "CropBox", "Rotate"}

func (a *analyzed) walkPages(r *reader, node value, inherited *dict, depth int, seen map[int]bool) error {
	if depth > maxPageTreeDepth {
		return fmt.Errorf("%w: page tree deeper than %d", ErrMalformed, maxPageTreeDepth)
	}
	rf, ok := node.(ref)
	if !ok {
		return fmt.Errorf("%w: page tree node is not a reference", ErrMalformed)
	}
	if seen[rf.num] {
		return fmt.Errorf("%w: page tree has a cycle", ErrMalformed)
	}
	seen[rf.num] = true
	d, err := r.dict(rf)
	if err != nil || d == nil {
		return fmt.Errorf("%w: page tree node %d", ErrMalformed, rf.num)
	}
	here := &dict{}
	for _, k := range inheritable {
		if v := d.get(k); v != nil {
			here.set(k, v)
		} else if v := inherited.get(k); v != nil {
			here.set(k, v)
		}
	}
	if t, _ := d.get("Type").(name); t == "Page" {
		p := pageRef{num: rf.num, inherit: here}
		if box, err := r.array(here.get("MediaBox")); err == nil && len(box) == 4 {
			p.mediaTop, _ = box[3].(number)
		}
		a.pages = append(a.pages, p)
		return nil
	}
	kids, err := r.array(d.get("Kids"))
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := a.walkPages(r, k, here, depth+1, seen); err != nil {
			return err
		}
	}
	return nil
}

// anchorOf reports the element id an anchor mark names, and the mark's
// URI.
func anchorOf(r *reader, an *dict) (id, uri string, ok bool) {
	uri, ok = linkURI(r, an)
	if !ok || !strings.HasPrefix(uri, AnchorPrefix) {
		return "", "", false
	}
	id, err := url.PathUnescape(strings.TrimPrefix(uri, AnchorPrefix))
	return id, uri, err == nil
}

// anchor records where the element id was printed, unless an earlier
// mark of the part said so.
func (a *analyzed) anchor(id string, t target) {
	if _, seen := a.anchors[id]; !seen {
		a.anchors[id] = t
	}
}

// linkURI is the URI a link annotation opens.
func linkURI(r *reader, an *dict) (string, bool) {
	if st, _ := an.get("Subtype").(name); st != "Link" {
		return "", false
	}
	act, err := r.dict(an.get("A"))
	if err != nil || act == nil {
		return "", false
	}
	if s, _ := act.get("S").(name); s != "URI" {
		return "", false
	}
	v, err := r.resolve(act.get("URI"))
	if err != nil {
		return "", false
	}
	s, ok := v.(str)
	if !ok {
		return "", false
	}
	return string(s.bytes()), true
}

func rectTarget(page int, an *dict) target {
	t := target{page: page, left: "0", top: "null"}
	if rect, ok := an.get("Rect").(array); ok && len(rect) == 4 {
		x1, _ := rect[0].(number)
		y1, _ := rect[1].(number)
		y2, _ := rect[3].(number)
		if x1 != "" {
			t.left = x1
		}
		top := y2
		if y1.float() > y2.float() {
			top = y1
		}
		if top != "" {
			t.top = top
		}
	}
	return t
}

// explicitTarget reads a destination array [page /XYZ left top zoom] (or
// /Fit and friends: the page's top then).
func explicitTarget(r *reader, v value, pageIndex map[int]int) (target, bool) {
	v, err := r.resolve(v)
	if err != nil {
		return target{}, false
	}
	if d, ok := v.(*dict); ok { // << /D [...] >>
		v, err = r.resolve(d.get("D"))
		if err != nil {
			return target{}, false
		}
	}
	a, ok := v.(array)
	if !ok || len(a) < 2 {
		return target{}, false
	}
	pr, ok := a[0].(ref)
	if !ok {
		return target{}, false
	}
	page, ok := pageIndex[pr.num]
	if !ok {
		return target{}, false
	}
	t := target{page: page, left: "null", top: "null"}
	if kind, _ := a[1].(name); kind == "XYZ" && len(a) >= 4 {
		if n, ok := a[2].(number); ok {
			t.left = n
		}
		if n, ok := a[3].(number); ok {
			t.top = n
		}
	}
	return t, true
}

// readOutline reads a list of sibling entries and, beneath each, its own.
// seen holds every entry read: an outline is a tree, so an entry met again
// is a cycle, and ends the list it was met in.
func readOutline(r *reader, first value, pageIndex map[int]int, a *analyzed, depth int, seen map[int]bool) ([]*outlineItem, error) {
	if depth > maxOutlineDepth {
		return nil, nil // deeper entries are dropped, not refused
	}
	var items []*outlineItem
	for cur := first; cur != nil; {
		rf, ok := cur.(ref)
		if !ok || seen[rf.num] {
			break
		}
		seen[rf.num] = true
		if len(seen) > maxOutlineEntries {
			return nil, fmt.Errorf("%w: more than %d outline entries", ErrMalformed, maxOutlineEntries)
		}
		d, err := r.dict(rf)
		if err != nil || d == nil {
			return nil, fmt.Errorf("%w: outline entry %d", ErrMalformed, rf.num)
		}
		it := &outlineItem{}
		if t, ok := d.get("Title").(str); ok {
			it.title = t.text()
		}
		it.dest = a.destOf(r, d, pageIndex)
		if it.children, err = readOutline(r, d.get("First"), pageIndex, a, depth+1, seen); err != nil {
			return nil, err
		}
		items = append(items, it)
		cur = d.get("Next")
	}
	return items, nil
}

// destOf resolves the destination of an outline entry or a link: /Dest
// (an array or a name) or a GoTo action's /D.
func (a *analyzed) destOf(r *reader, d *dict, pageIndex map[int]int) *target {
	v := d.get("Dest")
	if v == nil {
		act, err := r.dict(d.get("A"))
		if err != nil || act == nil {
			return nil
		}
		if s, _ := act.get("S").(name); s != "GoTo" {
			return nil
		}
		v = act.get("D")
	}
	v, err := r.resolve(v)
	if err != nil {
		return nil
	}
	switch v := v.(type) {
	case name:
		return a.named(decodeName(v))
	case str:
		return a.named(string(v.bytes()))
	}
	if t, ok := explicitTarget(r, v, pageIndex); ok {
		return &t
	}
	return nil
}

// named is where a named destination of the part points: the PDF's own
// destination, else an anchor mark of the element with that id.
func (a *analyzed) named(n string) *target {
	if t, ok := a.dests[n]; ok {
		return &t
	}
	if t, ok := a.anchors[n]; ok {
		return &t
	}
	return nil
}

// decodeName undoes a name's #xx escapes.
func decodeName(n name) string {
	s := string(n)
	if !strings.Contains(s, "#") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && i+2 < len(s) && unhex(s[i+1]) >= 0 && unhex(s[i+2]) >= 0 {
			b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
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

func (m *manual) pageRef(part, page int) ref {
	return ref{m.pageNums[m.partFirst[part]+page], 0}
}

func (m *manual) destArray(part int, t target) array {
	if t.top == "null" {
		t.top = m.parts[part].pages[t.page].top()
	}
	return array{m.pageRef(part, t.page), name("XYZ"), t.left, t.top, number("0")}
}

// producer is the Info dictionary's and the XMP metadata's /Producer.
const producer = "pdfexport"

// copyPart writes part i's pages and everything they use; audit looks
// for what an accessible document needs and the part lacks.
func (m *manual) copyPart(i int, audit bool) error {
	a := m.parts[i]
	r, err := reopenPDF(a.Path, a.xref)
	a.xref = xref{} // copied once: the reader holds it now
	if err != nil {
		return err
	}
	defer r.Close()
	c := &copier{r: r, w: m.w, remap: map[int]int{}, drop: map[int]bool{}, retitle: map[int]string{}}
	offset := 0
	droppedKeys := map[int]bool{}
	if m.tree != nil {
		offset = m.tree.nextKey
	}
	pageIndex := make(map[int]int, len(a.pages))
	for j, p := range a.pages {
		c.remap[p.num] = m.pageNums[m.partFirst[i]+j]
		pageIndex[p.num] = j
	}
	for j, p := range a.pages {
		page, err := r.dict(ref{p.num, 0})
		if err != nil {
			return err
		}
		out := &dict{}
		for k, key := range page.keys {
			switch key {
			case "Parent", "StructParents", "Annots", "B", "Metadata", "PieceInfo":
				continue // rewritten below, or about trees not copied
			}
			v, err := c.rewrite(page.vals[k])
			if err != nil {
				return err
			}
			out.set(key, v)
		}
		for _, k := range inheritable {
			if out.get(k) == nil {
				if v := p.inherit.get(k); v != nil {
					rv, err := c.rewrite(v)
					if err != nil {
						return err
					}
					out.set(k, rv)
				}
			}
		}
		out.set("Parent", ref{m.pagesRoot, 0})
		if m.tree != nil {
			if k, err := r.intValue(page.get("StructParents")); err == nil {
				out.set("StructParents", number(strconv.Itoa(int(k)+offset)))
			}
		}
		if m.overlay != nil {
			if err := m.overlay.drawOn(c, page, p, out, m.partFirst[i]+j); err != nil {
				return fmt.Errorf("overlay of page %d: %w", m.partFirst[i]+j+1, err)
			}
		}
		annots, err := m.annotations(c, i, page, pageIndex, offset, droppedKeys)
		if err != nil {
			return err
		}
		if len(annots) > 0 {
			out.set("Annots", annots)
		}
		if err := m.w.object(m.pageNums[m.partFirst[i]+j], out); err != nil {
			return err
		}
		if err := c.drain(); err != nil {
			return err
		}
	}
	if m.tree == nil {
		return nil
	}
	if err := m.copyStructure(c, i, offset, droppedKeys); err != nil {
		return fmt.Errorf("structure tree: %w", err)
	}
	if audit {
		fs, err := auditPart(r, i, a.pages)
		if err != nil {
			return fmt.Errorf("structure tree: %w", err)
		}
		m.findings = append(m.findings, fs...)
	}
	return nil
}

// annotations copies the annotations of a page: anchor marks dropped,
// links to a part of the manual made internal, the rest as they are. In a
// tagged manual a kept annotation keeps its place in the structure tree,
// its /StructParent shifted by offset; a dropped one's key goes into
// droppedKeys, and c learns which object it was, so that the tree's
// references to it are left out.
func (m *manual) annotations(c *copier, part int, page *dict, pageIndex map[int]int, offset int, droppedKeys map[int]bool) (array, error) {
	list, err := c.r.array(page.get("Annots"))
	if err != nil {
		return nil, err
	}
	var out array
	for _, av := range list {
		if rf, ok := av.(ref); ok && m.tree == nil && m.parts[part].isMark(rf.num) {
			// An anchor mark the analysis read: dropped unread (a
			// tagged manual reads it again for its structure key).
			c.drop[rf.num] = true
			continue
		}
		an, err := c.r.dict(av)
		if err != nil {
			return nil, err
		}
		if an == nil {
			continue
		}
		drop := func() {
			if rf, ok := av.(ref); ok {
				c.drop[rf.num] = true
			}
			if k, err := c.r.intValue(an.get("StructParent")); err == nil {
				droppedKeys[int(k)] = true
			}
		}
		if _, _, isAnchor := anchorOf(c.r, an); isAnchor {
			drop()
			continue
		}
		nd := &dict{}
		for k, key := range an.keys {
			switch key {
			case "StructParent", "P", "Parent":
				continue
			}
			nd.set(key, an.vals[k])
		}
		if m.tree != nil {
			if k, err := c.r.intValue(an.get("StructParent")); err == nil {
				nd.set("StructParent", number(strconv.Itoa(int(k)+offset)))
			}
		}
		var dest array // in the new numbering: set after the rewrite
		if st, _ := an.get("Subtype").(name); st == "Link" {
			var internal, keep bool
			switch dest, internal, keep = m.linkDest(c.r, part, an, pageIndex); {
			case !keep:
				drop()
				continue // a link inside the part to a place no longer known
			case dest != nil:
				nd.del("A")
				nd.del("Dest")
				if internal {
					m.internalLinks++
				}
			}
		}
		v, err := c.rewrite(nd)
		if err != nil {
			return nil, err
		}
		if dest != nil {
			v.(*dict).set("Dest", dest)
		}
		num := m.w.alloc()
		if rf, ok := av.(ref); ok {
			if _, copied := c.remap[rf.num]; !copied {
				c.remap[rf.num] = num // the structure tree's references to it
			}
		}
		if err := m.w.object(num, v); err != nil {
			return nil, err
		}
		out = append(out, ref{num, 0})
	}
	return out, nil
}

// linkDest decides what a link of part points at: dest is the new
// destination (nil: keep the link as it is); internal says it was made
// internal from a URL; keep false drops the link.
func (m *manual) linkDest(r *reader, part int, an *dict, pageIndex map[int]int) (dest array, internal, keep bool) {
	a := m.parts[part]
	if u, ok := linkURI(r, an); ok {
		to, frag, ok := m.partOf(u)
		if !ok {
			return nil, false, true // outside the manual: as it is
		}
		t := target{page: 0, left: "0", top: "null"}
		if frag != "" {
			if at := m.parts[to].named(frag); at != nil {
				t = *at
			}
		}
		return m.destArray(to, t), true, true
	}
	if an.get("Dest") == nil && an.get("A") == nil {
		return nil, false, true
	}
	t := a.destOf(r, an, pageIndex)
	if t == nil {
		act, _ := r.dict(an.get("A"))
		if act != nil {
			if s, _ := act.get("S").(name); s != "GoTo" {
				return nil, false, true // another action: as it is
			}
		}
		return nil, false, false
	}
	return m.destArray(part, *t), false, true
}

// partOf finds the part a URL names and its fragment.
func (m *manual) partOf(u string) (part int, fragment string, ok bool) {
	base, frag, _ := strings.Cut(u, "#")
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	if rest, isChapter := strings.CutPrefix(base, ChapterURL(0)[:len(ChapterURL(0))-1]); isChapter {
		n, err := strconv.Atoi(rest)
		if err != nil {
			return 0, "", false
		}
		part, ok = m.byChapter[n]
		return part, frag, ok
	}
	part, ok = m.byURL[spec.CanonicalURL(base)]
	return part, frag, ok
}

// writeOutline writes one entry per part (but NoEntry ones) with the
// part's own outline beneath it.
func (m *manual) writeOutline() (root, entries int, err error) {
	var top []*outlineItem
	var tops []int
	for i, a := range m.parts {
		if a.NoEntry {
			continue
		}
		title := outlineTitle(a.Title, a.title, i)
		t := target{page: 0, left: "0", top: "null"}
		top = append(top, &outlineItem{title: title, dest: &t, children: a.outline})
		tops = append(tops, i)
	}
	if len(top) == 0 {
		return 0, 0, nil
	}
	root = m.w.alloc()
	first, last, count, err := m.writeItems(root, top, func(k int) int { return tops[k] }, -1)
	if err != nil {
		return 0, 0, err
	}
	d := &dict{}
	d.set("Type", name("Outlines"))
	d.set("First", ref{first, 0})
	d.set("Last", ref{last, 0})
	d.set("Count", number(strconv.Itoa(count)))
	return root, count, m.w.object(root, d)
}

// writeItems writes a list of sibling entries under parent. Entries of the
// top level belong to the part partOfTop names; below it, to part.
func (m *manual) writeItems(parent int, items []*outlineItem, partOfTop func(int) int, part int) (first, last, count int, err error) {
	nums := make([]int, len(items))
	for k := range items {
		nums[k] = m.w.alloc()
	}
	for k, it := range items {
		p := part
		if p < 0 {
			p = partOfTop(k)
		}
		d := &dict{}
		d.set("Title", textString(it.title))
		d.set("Parent", ref{parent, 0})
		if k > 0 {
			d.set("Prev", ref{nums[k-1], 0})
		}
		if k+1 < len(items) {
			d.set("Next", ref{nums[k+1], 0})
		}
		if it.dest != nil {
			d.set("Dest", m.destArray(p, *it.dest))
		}
		if len(it.children) > 0 {
			cf, cl, cc, err := m.writeItems(nums[k], it.children, nil, p)
			if err != nil {
				return 0, 0, 0, err
			}
			d.set("First", ref{cf, 0})
			d.set("Last", ref{cl, 0})
			// Negative: closed at first, so a reader sees the chapters.
			d.set("Count", number(strconv.Itoa(-cc)))
			count += cc
		}
		if err := m.w.object(nums[k], d); err != nil {
			return 0, 0, 0, err
		}
		count++
	}
	return nums[0], nums[len(nums)-1], count, nil
}

// copier copies the objects a part's pages reference, renumbered.
type copier struct {
	r     *reader
	w     *writer
	remap map[int]int // old number → new
	queue []int       // old numbers to copy
	// drop are the annotations not copied: an object reference (OBJR) to
	// one is left out of what refers to it.
	drop map[int]bool
	// retitle are the part's root structure elements and their titles.
	retitle map[int]string
}

// rewrite returns v with every reference renumbered, queuing what it
// references for copying.
func (c *copier) rewrite(v value) (value, error) {
	switch v := v.(type) {
	case ref:
		n, ok := c.remap[v.num]
		if !ok {
			n = c.w.alloc()
			c.remap[v.num] = n
			c.queue = append(c.queue, v.num)
		}
		return ref{n, 0}, nil
	case array:
		out := make(array, 0, len(v))
		for _, item := range v {
			rv, err := c.rewrite(item)
			if err != nil {
				return nil, err
			}
			if _, gone := rv.(dropped); !gone {
				out = append(out, rv)
			}
		}
		return out, nil
	case *dict:
		if t, _ := v.get("Type").(name); t == "OBJR" {
			if o, ok := v.get("Obj").(ref); ok && c.drop[o.num] {
				return dropped{}, nil
			}
		}
		out := &dict{}
		for i, item := range v.vals {
			rv, err := c.rewrite(item)
			if err != nil {
				return nil, err
			}
			if _, gone := rv.(dropped); !gone {
				out.keys = append(out.keys, v.keys[i])
				out.vals = append(out.vals, rv)
			}
		}
		return out, nil
	}
	return v, nil
}

// drain copies every queued object.
func (c *copier) drain() error {
	for len(c.queue) > 0 {
		old := c.queue[len(c.queue)-1]
		c.queue = c.queue[:len(c.queue)-1]
		o, err := c.r.object(old)
		if err != nil {
			return err
		}
		num := c.remap[old]
		if o.streamAt < 0 {
			v, err := c.rewrite(o.val)
			if err != nil {
				return err
			}
			switch d := v.(type) {
			case *dict:
				c.structElem(old, d)
			case dropped:
				v = keyword("null") // an OBJR object of its own, to a dropped annotation
			}
			if err := c.w.object(num, v); err != nil {
				return err
			}
			continue
		}
		d := *o.val.(*dict)
		d.del("Length") // written as a direct number by stream
		rv, err := c.rewrite(&d)
		if err != nil {
			return err
		}
		if err := c.w.stream(num, rv.(*dict), c.r.section(o.streamAt, o.streamSize)); err != nil {
			return err
		}
	}
	return nil
}

// outlineTitle is a part's outline entry: its given title, else its
// PDF's, else its position.
func outlineTitle(given, pdfTitle string, i int) string {
	if given != "" {
		return given
	}
	if pdfTitle != "" {
		return pdfTitle
	}
	return "Chapter " + strconv.Itoa(i+1)
}

// overlay draws the pages of one PDF over the manual's, page for page,
// each as a form XObject.
type overlay struct {
	r      *reader
	pages  []pageRef
	c      *copier
	before ref // "q": the page's own content runs in a saved state
	after  ref // "Q" and the form: drawn in the page's default space
}

// overlayName is the form's name in a page's resources.
const overlayName = name("PdxOverlay")

func openOverlay(path string, w *writer, pages int, artifact bool) (*overlay, error) {
	a, err := analyze(Part{Path: path, Chapter: -1})
	if err != nil {
		return nil, err
	}
	if len(a.pages) != pages {
		return nil, fmt.Errorf("%w: %d pages for a manual of %d", ErrMalformed, len(a.pages), pages)
	}
	r, err := openPDF(path)
	if err != nil {
		return nil, err
	}
	o := &overlay{r: r, pages: a.pages, c: &copier{r: r, w: w, remap: map[int]int{}}}
	o.before = ref{w.alloc(), 0}
	o.after = ref{w.alloc(), 0}
	if err := w.stream(o.before.num, &dict{}, []byte("q\n")); err != nil {
		return nil, err
	}
	draw := "\nQ\nq /" + string(overlayName) + " Do Q\n"
	if artifact {
		// Running headers and footers are pagination artifacts, not
		// content (ISO 32000-1, 14.8.2.2): a screen reader skips them.
		draw = "\nQ\n/Artifact <</Type /Pagination>> BDC q /" + string(overlayName) + " Do Q EMC\n"
	}
	if err := w.stream(o.after.num, &dict{}, []byte(draw)); err != nil {
		return nil, err
	}
	return o, nil
}

// drawOn makes page out (the copy of page, read through c) draw overlay
// page g over its own content.
func (o *overlay) drawOn(c *copier, page *dict, p pageRef, out *dict, g int) error {
	form, err := o.form(g)
	if err != nil {
		return err
	}
	contents := array{o.before}
	switch v := out.get("Contents").(type) {
	case ref:
		contents = append(contents, v)
	case array:
		contents = append(contents, v...)
	}
	out.set("Contents", append(contents, o.after))
	// The page's resources, and their XObject dictionary, become the
	// page's own (direct) copies with the form added: a shared resources
	// object would lend the form to pages it does not belong to.
	resVal := page.get("Resources")
	if resVal == nil {
		resVal = p.inherit.get("Resources")
	}
	res, err := c.r.dict(resVal)
	if err != nil {
		return err
	}
	if res == nil {
		res = &dict{}
	}
	newRes, err := c.rewrite(res)
	if err != nil {
		return err
	}
	nr := newRes.(*dict)
	xo, err := c.r.dict(res.get("XObject"))
	if err != nil {
		return err
	}
	if xo == nil {
		xo = &dict{}
	}
	newXO, err := c.rewrite(xo)
	if err != nil {
		return err
	}
	nx := newXO.(*dict)
	nx.set(overlayName, ref{form, 0})
	nr.set("XObject", nx)
	out.set("Resources", nr)
	return nil
}

// form writes overlay page g as a form XObject and returns its number.
func (o *overlay) form(g int) (int, error) {
	p := o.pages[g]
	page, err := o.r.dict(ref{p.num, 0})
	if err != nil {
		return 0, err
	}
	cv := page.get("Contents")
	if a, ok := cv.(array); ok {
		if len(a) != 1 {
			return 0, fmt.Errorf("%w: an overlay page of %d content streams", ErrUnsupported, len(a))
		}
		cv = a[0]
	}
	cref, ok := cv.(ref)
	if !ok {
		return 0, fmt.Errorf("%w: overlay page without a content stream", ErrMalformed)
	}
	content, err := o.r.object(cref.num)
	if err != nil {
		return 0, err
	}
	sd, ok := content.val.(*dict)
	if !ok || content.streamAt < 0 {
		return 0, fmt.Errorf("%w: overlay content is not a stream", ErrMalformed)
	}
	d := &dict{}
	d.set("Type", name("XObject"))
	d.set("Subtype", name("Form"))
	box := page.get("MediaBox")
	if box == nil {
		box = p.inherit.get("MediaBox")
	}
	resVal := page.get("Resources")
	if resVal == nil {
		resVal = p.inherit.get("Resources")
	}
	for _, kv := range []struct {
		k name
		v value
	}{{"BBox", box}, {"Resources", resVal}, {"Filter", sd.get("Filter")}, {"DecodeParms", sd.get("DecodeParms")}} {
		if kv.v == nil {
			continue
		}
		v, err := o.c.rewrite(kv.v)
		if err != nil {
			return 0, err
		}
		d.set(kv.k, v)
	}
	num := o.c.w.alloc()
	if err := o.c.w.stream(num, d, o.r.section(content.streamAt, content.streamSize)); err != nil {
		return 0, err
	}
	return num, o.c.drain()
}
