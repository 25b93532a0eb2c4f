// Package pdfcheck checks PDFs as a test sees them, through tools other
// than the code that wrote them. Check judges the structure of a tagged
// PDF from qpdf's JSON (qpdf parses, this package judges, so the
// assembler's own reader checks nothing of its own work) and reports every
// rule broken; Poppler reads what a reader shows (info, text, fonts,
// images) through poppler-utils. Tests need qpdf and poppler-utils (make
// setup installs them).
package pdfcheck

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Want says what the file must also have beyond a tagged PDF's rules.
type Want struct {
	UA   bool // XMP pdfuaid:part 1, /Tabs /S on pages with annotations
	PDFA bool // XMP pdfaid 2/B, an sRGB output intent, no encryption, fonts embedded
	// Artifact is the name of a form XObject that every page must draw
	// inside /Artifact marked content (the running headers and footers).
	Artifact string
}

// Report is what Check found.
type Report struct {
	Pages int
	// Tree is the structure tree in reading order: the grouping elements
	// and headings, one a line, indented by depth, each with the page of
	// its first marked content.
	Tree string
	// Headings counts the headings under each Part, in order.
	Headings []int
	// PartTitles are the Parts' titles, in order.
	PartTitles []string
	// MarkedContent counts the marked-content sequences with an id over
	// every page; Links the link annotations.
	MarkedContent, Links int
	Lang                 string
	// Problems lists every rule broken; none means the file passed.
	Problems []string
}

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < 50 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// doc is qpdf's JSON of a file.
type doc struct {
	objects map[string]json.RawMessage
	trailer map[string]any
}

func read(ctx context.Context, path string) (*doc, error) {
	out, err := exec.CommandContext(ctx, "qpdf", "--json=2", "--json-stream-data=inline", "--decode-level=generalized", path, "-").Output()
	if err != nil {
		return nil, fmt.Errorf("qpdf --json %s: %w", path, err)
	}
	var top struct {
		QPDF []json.RawMessage `json:"qpdf"`
	}
	if err := json.Unmarshal(out, &top); err != nil || len(top.QPDF) != 2 {
		return nil, fmt.Errorf("qpdf --json: unexpected output: %v", err)
	}
	d := &doc{}
	if err := json.Unmarshal(top.QPDF[1], &d.objects); err != nil {
		return nil, err
	}
	var tr struct {
		Value map[string]any `json:"value"`
	}
	if err := json.Unmarshal(d.objects["trailer"], &tr); err != nil {
		return nil, err
	}
	d.trailer = tr.Value
	return d, nil
}

// obj is an indirect object: its value, and its data for a stream.
type obj struct {
	val  any
	data []byte
}

func (d *doc) get(r string) obj {
	raw, ok := d.objects["obj:"+r]
	if !ok {
		return obj{}
	}
	var o struct {
		Value  any `json:"value"`
		Stream *struct {
			Dict map[string]any `json:"dict"`
			Data string         `json:"data"`
		} `json:"stream"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return obj{}
	}
	if o.Stream != nil {
		data, _ := base64.StdEncoding.DecodeString(o.Stream.Data)
		return obj{val: o.Stream.Dict, data: data}
	}
	return obj{val: o.Value}
}

func isRef(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok && strings.HasSuffix(s, " R") && !strings.HasPrefix(s, "/") && !strings.Contains(s, ":")
}

// resolve follows references.
func (d *doc) resolve(v any) any {
	for range 8 {
		r, ok := isRef(v)
		if !ok {
			return v
		}
		v = d.get(r).val
	}
	return nil
}

func (d *doc) dict(v any) map[string]any { m, _ := d.resolve(v).(map[string]any); return m }
func (d *doc) array(v any) []any         { a, _ := d.resolve(v).([]any); return a }

func text(v any) string {
	s, _ := v.(string)
	if t, ok := strings.CutPrefix(s, "u:"); ok {
		return t
	}
	return s
}

func num(v any) (int, bool) {
	f, ok := v.(float64)
	return int(f), ok
}

// Check reads the PDF at path and checks it.
func Check(ctx context.Context, path string, want Want) (*Report, error) {
	d, err := read(ctx, path)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	c := &checker{d: d, rep: rep, want: want, pageOf: map[string]int{}, inTree: map[mcKey]string{}, objrs: map[string]string{}, forms: map[mcKey]string{}}
	c.run()
	return rep, nil
}

type mcKey struct {
	page string
	mcid int
}

type checker struct {
	d      *doc
	rep    *Report
	want   Want
	pages  []string       // page objects, in order
	pageOf map[string]int // page object → 0-based index
	// inTree: each marked-content id the tree reaches → the element
	// that holds it; objrs: each annotation the tree references → its
	// element.
	inTree map[mcKey]string
	objrs  map[string]string
	forms  map[mcKey]string // marked content of form XObjects → its element
	lines  []string         // the tree's dump
	// lastHeading is the page of the last heading met in reading order.
	lastHeading int
	seen        map[string]bool
}

func (c *checker) run() {
	d, rep := c.d, c.rep
	root := d.dict(d.trailer["/Root"])
	if root == nil {
		rep.problem("no catalog")
		return
	}
	c.walkPages(root["/Pages"], 0)
	rep.Pages = len(c.pages)
	c.catalog(root)
	str := d.dict(root["/StructTreeRoot"])
	if str == nil {
		rep.problem("no structure tree (/StructTreeRoot)")
		return
	}
	k := str["/K"]
	if a, ok := k.([]any); ok && len(a) == 1 {
		k = a[0]
	}
	rootRef, _ := isRef(root["/StructTreeRoot"])
	top, isElem := isRef(k)
	if !isElem || text(d.dict(top)["/S"]) != "/Document" {
		rep.problem("the structure tree's root holds %v, not one Document element", k)
	} else {
		c.seen = map[string]bool{}
		c.element(top, rootRef, 0, -1)
		c.rep.Tree = strings.Join(c.lines, "\n") + "\n"
	}
	parentTree := map[int]any{}
	c.numberTree(str["/ParentTree"], parentTree, 0)
	c.content(parentTree)
	c.annotations(parentTree)
	if c.want.PDFA {
		c.fonts()
	}
}

func (c *checker) walkPages(node any, depth int) {
	r, _ := isRef(node)
	n := c.d.dict(node)
	if n == nil || depth > 32 {
		return
	}
	if text(n["/Type"]) == "/Page" {
		c.pageOf[r] = len(c.pages)
		c.pages = append(c.pages, r)
		return
	}
	for _, k := range c.d.array(n["/Kids"]) {
		c.walkPages(k, depth+1)
	}
}

func (c *checker) catalog(root map[string]any) {
	d, rep := c.d, c.rep
	if mi := d.dict(root["/MarkInfo"]); mi == nil || mi["/Marked"] != true {
		rep.problem("/MarkInfo <</Marked true>> missing")
	}
	rep.Lang = text(root["/Lang"])
	if rep.Lang == "" {
		rep.problem("no /Lang in the catalog")
	}
	if vp := d.dict(root["/ViewerPreferences"]); vp == nil || vp["/DisplayDocTitle"] != true {
		rep.problem("/ViewerPreferences <</DisplayDocTitle true>> missing")
	}
	info := d.dict(d.trailer["/Info"])
	title := text(info["/Title"])
	if title == "" {
		rep.problem("no /Title in the Info dictionary")
	}
	mr, _ := isRef(root["/Metadata"])
	xmp := string(d.get(mr).data)
	if xmp == "" {
		rep.problem("no XMP metadata stream")
	}
	need := []string{"<dc:title>", ">" + xmlEscape(title) + "</rdf:li>"}
	if c.want.UA {
		need = append(need, "<pdfuaid:part>1</pdfuaid:part>")
	}
	if c.want.PDFA {
		need = append(need, "<pdfaid:part>2</pdfaid:part>", "<pdfaid:conformance>B</pdfaid:conformance>")
	}
	for _, s := range need {
		if !strings.Contains(xmp, s) {
			rep.problem("the XMP metadata lacks %s", s)
		}
	}
	if !c.want.PDFA {
		return
	}
	if c.d.trailer["/Encrypt"] != nil {
		rep.problem("encrypted (PDF/A forbids it)")
	}
	intents := d.array(root["/OutputIntents"])
	if len(intents) == 0 {
		rep.problem("no /OutputIntents")
		return
	}
	oi := d.dict(intents[0])
	pr, _ := isRef(oi["/DestOutputProfile"])
	prof := d.get(pr)
	pd, _ := prof.val.(map[string]any)
	n, _ := num(pd["/N"])
	if text(oi["/S"]) != "/GTS_PDFA1" || n != 3 || len(prof.data) < 132 ||
		string(prof.data[36:40]) != "acsp" || string(prof.data[16:20]) != "RGB " {
		rep.problem("the output intent is not a PDF/A one with an RGB ICC profile: %v", oi)
	}
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// element walks a structure element and its kids; page is the page its
// content is on unless a kid says otherwise. It returns the first page
// of its content (-1: none).
func (c *checker) element(r, parent string, depth, page int) int {
	first := -1
	if c.seen[r] {
		c.rep.problem("structure element %s met twice", r)
		return first
	}
	c.seen[r] = true
	e := c.d.dict(r)
	if e == nil {
		c.rep.problem("structure element %s missing", r)
		return first
	}
	if p, _ := isRef(e["/P"]); p != parent {
		c.rep.problem("structure element %s: /P %v, not its parent %s", r, e["/P"], parent)
	}
	if pg, ok := isRef(e["/Pg"]); ok {
		if i, ok := c.pageOf[pg]; ok {
			page = i
		} else {
			c.rep.problem("structure element %s: /Pg %s is no page of the document", r, pg)
		}
	}
	s := strings.TrimPrefix(text(e["/S"]), "/")
	heading := len(s) == 2 && s[0] == 'H' && s[1] >= '1' && s[1] <= '6'
	var line string
	at := -1
	switch {
	case s == "Document" || s == "Part" || s == "Sect" || heading:
		line = strings.Repeat("  ", depth) + s
		if t := text(e["/T"]); t != "" {
			line += " " + strconv.Quote(t)
		}
		if s == "Part" {
			c.rep.PartTitles = append(c.rep.PartTitles, text(e["/T"]))
			c.rep.Headings = append(c.rep.Headings, 0)
		}
		if heading && len(c.rep.Headings) > 0 {
			c.rep.Headings[len(c.rep.Headings)-1]++
		}
		depth++
		at = len(c.lines)
		c.lines = append(c.lines, line)
	}
	kids := e["/K"]
	if _, ok := kids.([]any); !ok && kids != nil {
		kids = []any{kids}
	}
	for _, k := range c.d.array(kids) {
		if kr, ok := isRef(k); ok && c.d.dict(kr)["/S"] != nil {
			if p := c.element(kr, r, depth, page); p >= 0 && (first < 0 || p < first) {
				first = p
			}
			continue
		}
		kv := c.d.resolve(k)
		if n, ok := num(kv); ok {
			c.mc(r, page, n, &first)
			continue
		}
		kd, _ := kv.(map[string]any)
		kpage := page
		if pg, ok := isRef(kd["/Pg"]); ok {
			kpage = c.pageOf[pg]
		}
		switch text(kd["/Type"]) {
		case "/MCR":
			n, ok := num(kd["/MCID"])
			if stm, inForm := isRef(kd["/Stm"]); ok && inForm {
				// Marked content of a form XObject: ids of its own.
				k := mcKey{"form " + stm, n}
				if prev, dup := c.forms[k]; dup {
					c.rep.problem("marked content %d of form %s in %s and %s", n, stm, prev, r)
				}
				c.forms[k] = r
			} else if ok {
				c.mc(r, kpage, n, &first)
			}
		case "/OBJR":
			o, _ := isRef(kd["/Obj"])
			c.objrs[o] = r
		default:
			c.rep.problem("structure element %s: a kid %v that is no element, id or reference", r, k)
		}
	}
	if at >= 0 && first >= 0 {
		c.lines[at] += fmt.Sprintf(" (page %d)", first+1)
	}
	if heading && first >= 0 {
		if first < c.lastHeading {
			c.rep.problem("headings out of order: %s on page %d after a heading on page %d", s, first+1, c.lastHeading+1)
		}
		c.lastHeading = first
	}
	return first
}

func (c *checker) mc(elem string, page, mcid int, first *int) {
	if page < 0 {
		c.rep.problem("structure element %s: marked content %d on no page", elem, mcid)
		return
	}
	k := mcKey{c.pages[page], mcid}
	if prev, dup := c.inTree[k]; dup {
		c.rep.problem("marked content %d of page %d in %s and %s", mcid, page+1, prev, elem)
	}
	c.inTree[k] = elem
	if *first < 0 || page < *first {
		*first = page
	}
}

func (c *checker) numberTree(node any, into map[int]any, depth int) {
	n := c.d.dict(node)
	if n == nil || depth > 32 {
		return
	}
	nums := c.d.array(n["/Nums"])
	for i := 0; i+1 < len(nums); i += 2 {
		k, _ := num(nums[i])
		if _, dup := into[k]; dup {
			c.rep.problem("parent tree key %d twice", k)
		}
		into[k] = nums[i+1]
	}
	for _, k := range c.d.array(n["/Kids"]) {
		c.numberTree(k, into, depth+1)
	}
}

// content checks every page's marked content against the tree and the
// parent tree.
func (c *checker) content(parentTree map[int]any) {
	onPages := map[mcKey]bool{}
	for i, p := range c.pages {
		page := c.d.dict(p)
		var data []byte
		contents := page["/Contents"]
		if _, ok := contents.([]any); !ok {
			contents = []any{contents}
		}
		for _, s := range c.d.array(contents) {
			r, _ := isRef(s)
			data = append(append(data, c.d.get(r).data...), '\n')
		}
		sc := scan(data)
		for _, p := range sc.problems {
			c.rep.problem("page %d: %s", i+1, p)
		}
		if c.want.Artifact != "" && !slices.Contains(sc.artifactDo, c.want.Artifact) {
			c.rep.problem("page %d: /%s is not drawn as an artifact", i+1, c.want.Artifact)
		}
		if len(sc.mcids) == 0 {
			continue
		}
		sp, ok := num(page["/StructParents"])
		if !ok {
			c.rep.problem("page %d has marked content but no /StructParents", i+1)
			continue
		}
		list := c.d.array(parentTree[sp])
		for _, id := range sc.mcids {
			c.rep.MarkedContent++
			k := mcKey{p, id}
			onPages[k] = true
			elem, ok := c.inTree[k]
			if !ok {
				c.rep.problem("page %d: marked content %d is in no structure element (orphan)", i+1, id)
				continue
			}
			if id >= len(list) {
				c.rep.problem("page %d: marked content %d has no parent tree entry", i+1, id)
				continue
			}
			if pe, _ := isRef(list[id]); pe != elem {
				c.rep.problem("page %d: the parent tree gives marked content %d to %v, the tree to %s", i+1, id, list[id], elem)
			}
		}
	}
	for k, elem := range c.inTree {
		if !onPages[k] {
			c.rep.problem("structure element %s holds marked content %d of page %d that the page does not have", elem, k.mcid, c.pageOf[k.page]+1)
		}
	}
}

func (c *checker) annotations(parentTree map[int]any) {
	onPages := map[string]bool{}
	for i, p := range c.pages {
		page := c.d.dict(p)
		annots := c.d.array(page["/Annots"])
		if len(annots) > 0 && c.want.UA && text(page["/Tabs"]) != "/S" {
			c.rep.problem("page %d has annotations but no /Tabs /S", i+1)
		}
		for _, a := range annots {
			r, _ := isRef(a)
			onPages[r] = true
			an := c.d.dict(a)
			if text(an["/Subtype"]) != "/Link" {
				continue
			}
			c.rep.Links++
			sp, ok := num(an["/StructParent"])
			if !ok {
				c.rep.problem("page %d: link %s has no /StructParent", i+1, r)
				continue
			}
			pe, _ := isRef(parentTree[sp])
			if elem, ok := c.objrs[r]; !ok || elem != pe {
				c.rep.problem("page %d: link %s: the parent tree names %v, the tree %q", i+1, r, parentTree[sp], elem)
			}
		}
	}
	for o, elem := range c.objrs {
		if !onPages[o] {
			c.rep.problem("structure element %s references %s, which is on no page (dangling OBJR)", elem, o)
		}
	}
}

// fonts checks that every font the pages and their forms use is embedded.
func (c *checker) fonts() {
	seen := map[string]bool{}
	var res func(v any, depth int)
	res = func(v any, depth int) {
		rd := c.d.dict(v)
		if rd == nil || depth > 8 {
			return
		}
		for n, f := range c.d.dict(rd["/Font"]) {
			fr, _ := isRef(f)
			if seen[fr] {
				continue
			}
			seen[fr] = true
			fd := c.d.dict(f)
			if text(fd["/Subtype"]) == "/Type3" {
				continue
			}
			desc := c.d.dict(fd["/FontDescriptor"])
			if text(fd["/Subtype"]) == "/Type0" {
				if ds := c.d.array(fd["/DescendantFonts"]); len(ds) > 0 {
					desc = c.d.dict(c.d.dict(ds[0])["/FontDescriptor"])
				}
			}
			if desc["/FontFile"] == nil && desc["/FontFile2"] == nil && desc["/FontFile3"] == nil {
				c.rep.problem("font %s (%s, %s) is not embedded", n, fr, text(fd["/BaseFont"]))
			}
		}
		for _, x := range c.d.dict(rd["/XObject"]) {
			xr, _ := isRef(x)
			if seen[xr] {
				continue
			}
			seen[xr] = true
			if xd, _ := c.d.get(xr).val.(map[string]any); text(xd["/Subtype"]) == "/Form" {
				res(xd["/Resources"], depth+1)
			}
		}
	}
	for _, p := range c.pages {
		res(c.d.dict(p)["/Resources"], 0)
	}
}
