package assemble

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

type outlineItem struct {
	title    string
	dest     *target
	children []*outlineItem
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
