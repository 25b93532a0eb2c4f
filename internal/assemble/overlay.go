package assemble

import (
	"fmt"
)

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
