package assemble

import (
	"fmt"
	"strconv"
)

// A tagged manual keeps every part's structure tree (what Chromium prints
// with GenerateTaggedPDF) under one Document element:
//
//   - each part's own root element (Chromium's Document) becomes a Part
//     titled like the part's outline entry, a child of the manual's
//     Document, in the parts' order, so the tree reads in page order;
//   - marked-content ids are ids within a page's content, and pages are
//     copied whole, so they keep theirs; what is renumbered is the parent
//     tree's keys (a page's /StructParents, an annotation's /StructParent),
//     shifted past the keys of the parts before;
//   - an annotation the assembly drops (an anchor mark, a link to a place
//     no longer known) takes its object references (OBJR) and its parent
//     tree entry with it, so nothing in the tree points at an annotation
//     that is not on its page; kept links keep theirs;
//   - element ids (/ID) are dropped with the parts' ID trees: two chapters
//     may use one id, and nothing in the manual refers to them;
//   - role and class maps are merged, the first part's entry winning.
//
// The parent tree is written as one node per part beneath a root that
// lists them, each written once its part is copied: what the assembly
// holds of the tree is a few numbers per part.

// structTree is the manual's structure tree while it is written.
type structTree struct {
	root, doc  int   // the StructTreeRoot and the manual's Document element
	kids       array // the Part elements, in order
	nodes      array // one parent tree node per tagged part
	nextKey    int   // the next free parent tree key
	roleMap    *dict
	classMap   *dict
	lang       string // the first part's language
	taggedPart int    // parts that had a structure tree
}

// dropped is the copier's mark for what a rewrite leaves out: an object
// reference to an annotation that was not copied.
type dropped struct{}

// maxParentTreeDepth bounds the parent tree's nesting in a part.
const maxParentTreeDepth = 32

// copyStructure copies part i's structure tree, whose pages and
// annotations c copied already, into the manual's; offset is what its
// parent tree keys are shifted by, droppedKeys the keys of the
// annotations that were not copied.
func (m *manual) copyStructure(c *copier, i int, offset int, droppedKeys map[int]bool) error {
	t := m.tree
	r := c.r
	root, err := r.dict(r.trailer.get("Root"))
	if err != nil || root == nil {
		return fmt.Errorf("%w: no catalog", ErrMalformed)
	}
	rootRef, ok := root.get("StructTreeRoot").(ref)
	if !ok {
		return nil // an untagged part: its content stays unmarked
	}
	sr, err := r.dict(rootRef)
	if err != nil || sr == nil {
		return fmt.Errorf("%w: structure tree root", ErrMalformed)
	}
	t.taggedPart++
	if t.lang == "" && knownLang(root.get("Lang")) {
		t.lang = root.get("Lang").(str).text()
	}
	// The part's elements name its root as their parent: the manual's
	// Document element takes its place.
	c.remap[rootRef.num] = t.doc
	a := m.parts[i]
	if err := t.adoptElements(c, sr, outlineTitle(a.Title, a.title, i)); err != nil {
		return err
	}
	if err := t.mergeMaps(c, sr); err != nil {
		return err
	}
	if err := m.copyParentTree(c, sr, offset, droppedKeys); err != nil {
		return err
	}
	return c.drain()
}

// adoptElements makes the top-level elements of a part's structure tree
// root sr children of the manual's Document element, its own root element
// titled title (see structElem).
func (t *structTree) adoptElements(c *copier, sr *dict, title string) error {
	kv, err := c.r.resolve(sr.get("K"))
	if err != nil {
		return err
	}
	var top array
	switch kv := kv.(type) {
	case array:
		top = kv
	case *dict, ref:
		top = array{sr.get("K")}
	}
	for _, k := range top {
		kr, ok := k.(ref)
		if !ok {
			continue // a direct element or a content item under the root: nowhere to hang it
		}
		if _, seen := c.remap[kr.num]; !seen {
			c.retitle[kr.num] = title
		}
		nv, err := c.rewrite(kr)
		if err != nil {
			return err
		}
		t.kids = append(t.kids, nv)
	}
	return nil
}

// mergeMaps adds the entries of the role and class maps of a part's
// structure tree root sr that the manual's maps lack.
func (t *structTree) mergeMaps(c *copier, sr *dict) error {
	for _, mk := range []struct {
		key name
		to  **dict
	}{{"RoleMap", &t.roleMap}, {"ClassMap", &t.classMap}} {
		d, err := c.r.dict(sr.get(mk.key))
		if err != nil || d == nil {
			continue
		}
		if *mk.to == nil {
			*mk.to = &dict{}
		}
		for k, key := range d.keys {
			if (*mk.to).get(key) != nil {
				continue
			}
			v, err := c.rewrite(d.vals[k])
			if err != nil {
				return err
			}
			(*mk.to).set(key, v)
		}
	}
	return nil
}

// copyParentTree writes the parent tree of a part's structure tree root
// sr as one node of the manual's, its keys shifted by offset and those of
// droppedKeys left out, and moves the manual's next free key past them.
func (m *manual) copyParentTree(c *copier, sr *dict, offset int, droppedKeys map[int]bool) error {
	t := m.tree
	r := c.r
	var nums array
	maxKey := -1
	err := walkNumberTree(r, sr.get("ParentTree"), 0, map[int]bool{}, func(k int, v value) error {
		if droppedKeys[k] {
			return nil
		}
		nv, err := c.rewrite(v)
		if err != nil {
			return err
		}
		nums = append(nums, number(strconv.Itoa(k+offset)), nv)
		maxKey = max(maxKey, k)
		return nil
	})
	if err != nil {
		return fmt.Errorf("parent tree: %w", err)
	}
	next := maxKey + 1
	if n, err := r.intValue(sr.get("ParentTreeNextKey")); err == nil && int(n) > next {
		next = int(n)
	}
	if len(nums) > 0 {
		node := &dict{}
		node.set("Limits", array{nums[0], nums[len(nums)-2]})
		node.set("Nums", nums)
		num := m.w.alloc()
		if err := m.w.object(num, node); err != nil {
			return err
		}
		t.nodes = append(t.nodes, ref{num, 0})
	}
	t.nextKey = offset + next
	return nil
}

// walkNumberTree calls fn with every key and value of a number tree, in
// the order written (ascending, for a well-formed tree).
func walkNumberTree(r *reader, node value, depth int, seen map[int]bool, fn func(int, value) error) error {
	if depth > maxParentTreeDepth {
		return fmt.Errorf("%w: number tree deeper than %d", ErrMalformed, maxParentTreeDepth)
	}
	if rf, ok := node.(ref); ok {
		if seen[rf.num] {
			return fmt.Errorf("%w: number tree has a cycle", ErrMalformed)
		}
		seen[rf.num] = true
	}
	d, err := r.dict(node)
	if err != nil || d == nil {
		return err
	}
	nums, err := r.array(d.get("Nums"))
	if err != nil {
		return err
	}
	for k := 0; k+1 < len(nums); k += 2 {
		n, ok := nums[k].(number)
		if !ok {
			return fmt.Errorf("%w: number tree key %v", ErrMalformed, nums[k])
		}
		key, err := strconv.Atoi(string(n))
		if err != nil || key < 0 {
			return fmt.Errorf("%w: number tree key %q", ErrMalformed, n)
		}
		if err := fn(key, nums[k+1]); err != nil {
			return err
		}
	}
	kids, err := r.array(d.get("Kids"))
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := walkNumberTree(r, k, depth+1, seen, fn); err != nil {
			return err
		}
	}
	return nil
}

// structElem adjusts a structure element as it is copied: a part's root
// element becomes a titled Part, and element ids go (see above).
func (c *copier) structElem(old int, d *dict) {
	if t, ok := d.get("Type").(name); !ok || t != "StructElem" {
		if _, hasS := d.get("S").(name); !hasS || d.get("P") == nil {
			return
		}
	}
	d.del("ID")
	if title, ok := c.retitle[old]; ok {
		if s, _ := d.get("S").(name); s == "Document" {
			d.set("S", name("Part"))
		}
		if d.get("T") == nil {
			d.set("T", textString(title))
		}
	}
}

// writeStructure writes the manual's structure tree root and Document
// element, once every part is copied.
func (m *manual) writeStructure(lang string) error {
	t := m.tree
	doc := &dict{}
	doc.set("Type", name("StructElem"))
	doc.set("S", name("Document"))
	doc.set("P", ref{t.root, 0})
	if lang != "" {
		doc.set("Lang", textString(lang))
	}
	doc.set("K", t.kids)
	if err := m.w.object(t.doc, doc); err != nil {
		return err
	}
	pt := &dict{}
	pt.set("Kids", t.nodes)
	ptNum := m.w.alloc()
	if err := m.w.object(ptNum, pt); err != nil {
		return err
	}
	root := &dict{}
	root.set("Type", name("StructTreeRoot"))
	root.set("K", ref{t.doc, 0})
	root.set("ParentTree", ref{ptNum, 0})
	root.set("ParentTreeNextKey", number(strconv.Itoa(t.nextKey)))
	if t.roleMap != nil {
		root.set("RoleMap", t.roleMap)
	}
	if t.classMap != nil {
		root.set("ClassMap", t.classMap)
	}
	return m.w.object(t.root, root)
}
