package assemble

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
)

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

// analyze reads what the assembly needs of a part: its title and
// language, its pages, where its anchor and heading marks were printed,
// its named destinations and its outline (Chromium's, else the one its
// heading marks make).
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
	headings, err := a.readMarks(r)
	if err != nil {
		return nil, err
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
