package assemble

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// ChapterURL is the URL a generated page (the table of contents) links
// chapter i (0-based) with; Assemble turns it into a link to the chapter.
func ChapterURL(i int) string { return "https://chapter.pdfexport.invalid/" + strconv.Itoa(i) }

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

func (m *manual) pageRef(part, page int) ref {
	return ref{m.pageNums[m.partFirst[part]+page], 0}
}

func (m *manual) destArray(part int, t target) array {
	if t.top == "null" {
		t.top = m.parts[part].pages[t.page].top()
	}
	return array{m.pageRef(part, t.page), name("XYZ"), t.left, t.top, number("0")}
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
		nd, dest, keep := m.annotationCopy(c.r, part, an, pageIndex, offset)
		if !keep {
			c.dropAnnotation(av, an, droppedKeys)
			continue
		}
		num, err := c.writeAnnotation(av, nd, dest)
		if err != nil {
			return nil, err
		}
		out = append(out, ref{num, 0})
	}
	return out, nil
}

// annotationCopy is what annotation an of part becomes, not yet
// renumbered: its entries but those tying it to its part's trees, its
// /StructParent shifted by offset (tagged), and dest, the destination a
// link takes instead of its own (nil: none). keep false drops it: an
// anchor mark, or a link inside the part to a place no longer known.
func (m *manual) annotationCopy(r *reader, part int, an *dict, pageIndex map[int]int, offset int) (nd *dict, dest array, keep bool) {
	if _, _, isAnchor := anchorOf(r, an); isAnchor {
		return nil, nil, false
	}
	nd = &dict{}
	for k, key := range an.keys {
		switch key {
		case "StructParent", "P", "Parent":
			continue
		}
		nd.set(key, an.vals[k])
	}
	if m.tree != nil {
		if k, err := r.intValue(an.get("StructParent")); err == nil {
			nd.set("StructParent", number(strconv.Itoa(int(k)+offset)))
		}
	}
	if st, _ := an.get("Subtype").(name); st != "Link" {
		return nd, nil, true
	}
	dest, internal, keep := m.linkDest(r, part, an, pageIndex)
	switch {
	case !keep:
		return nil, nil, false
	case dest != nil:
		nd.del("A")
		nd.del("Dest")
		if internal {
			m.internalLinks++
		}
	}
	return nd, dest, true
}

// dropAnnotation leaves annotation av (an, read) out of the copy: c drops
// the structure tree's object references to it, and its parent tree key
// goes into droppedKeys.
func (c *copier) dropAnnotation(av value, an *dict, droppedKeys map[int]bool) {
	if rf, ok := av.(ref); ok {
		c.drop[rf.num] = true
	}
	if k, err := c.r.intValue(an.get("StructParent")); err == nil {
		droppedKeys[int(k)] = true
	}
}

// writeAnnotation writes nd, the copy of annotation av, renumbered, with
// dest (in the new numbering) as its destination unless nil, and returns
// its new object number.
func (c *copier) writeAnnotation(av value, nd *dict, dest array) (int, error) {
	v, err := c.rewrite(nd)
	if err != nil {
		return 0, err
	}
	if dest != nil {
		v.(*dict).set("Dest", dest)
	}
	num := c.w.alloc()
	if rf, ok := av.(ref); ok {
		if _, copied := c.remap[rf.num]; !copied {
			c.remap[rf.num] = num // the structure tree's references to it
		}
	}
	return num, c.w.object(num, v)
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
