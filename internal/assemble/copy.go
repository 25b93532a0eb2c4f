package assemble

import (
	"fmt"
	"strconv"
)

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
	for j := range a.pages {
		if err := m.copyPage(c, i, j, pageIndex, offset, droppedKeys); err != nil {
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

// copyPage writes page j of part i and everything it uses: its own
// entries, what it inherits from its page tree, the overlay's page drawn
// over it and its annotations (see annotations for pageIndex, offset and
// droppedKeys).
func (m *manual) copyPage(c *copier, i, j int, pageIndex map[int]int, offset int, droppedKeys map[int]bool) error {
	p := m.parts[i].pages[j]
	g := m.partFirst[i] + j // the page's index in the manual
	page, err := c.r.dict(ref{p.num, 0})
	if err != nil {
		return err
	}
	out, err := c.pageEntries(page, p)
	if err != nil {
		return err
	}
	out.set("Parent", ref{m.pagesRoot, 0})
	if m.tree != nil {
		if k, err := c.r.intValue(page.get("StructParents")); err == nil {
			out.set("StructParents", number(strconv.Itoa(int(k)+offset)))
		}
	}
	if m.overlay != nil {
		if err := m.overlay.drawOn(c, page, p, out, g); err != nil {
			return fmt.Errorf("overlay of page %d: %w", g+1, err)
		}
	}
	annots, err := m.annotations(c, i, page, pageIndex, offset, droppedKeys)
	if err != nil {
		return err
	}
	if len(annots) > 0 {
		out.set("Annots", annots)
	}
	if err := m.w.object(m.pageNums[g], out); err != nil {
		return err
	}
	return c.drain()
}

// pageEntries copies the entries of page (p in its part's page tree) that
// are kept as they are, and those it inherits, onto a page dictionary of
// its own: the manual's page tree has no attributes to inherit.
func (c *copier) pageEntries(page *dict, p pageRef) (*dict, error) {
	out := &dict{}
	for k, key := range page.keys {
		switch key {
		case "Parent", "StructParents", "Annots", "B", "Metadata", "PieceInfo":
			continue // rewritten by copyPage, or about trees not copied
		}
		v, err := c.rewrite(page.vals[k])
		if err != nil {
			return nil, err
		}
		out.set(key, v)
	}
	for _, k := range inheritable {
		if out.get(k) != nil {
			continue
		}
		if v := p.inherit.get(k); v != nil {
			rv, err := c.rewrite(v)
			if err != nil {
				return nil, err
			}
			out.set(k, rv)
		}
	}
	return out, nil
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
