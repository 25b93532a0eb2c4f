package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// FlattenOptions configure Flatten; there are none yet.
type FlattenOptions struct{}

// Annotation flags (PDF 32000-1, 12.5.3) that keep an annotation off the
// page.
const (
	annotHidden = 1 << 1
	annotNoView = 1 << 5
)

// Flatten draws every annotation's appearance into its page's content
// and deletes the annotation, as qpdf's --flatten-annotations=all does: a
// form's fields become text and boxes that can no longer be edited, the
// AcroForm goes. Hidden annotations and form fields without an
// appearance are deleted undrawn; annotations without an appearance that
// are not form fields (links, popups of the annotations kept) stay.
func Flatten(ctx context.Context, pdf []byte, _ FlattenOptions) ([]byte, error) {
	src, err := readPDF(pdf)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	for p := 1; p <= src.PageCount; p++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := flattenPage(src.XRefTable, p); err != nil {
			return nil, &InputError{Err: fmt.Errorf("page %d: %w", p, err)}
		}
	}
	if root, err := src.Catalog(); err == nil {
		root.Delete("AcroForm")
	}
	return writePDF(src)
}

// flattenPage flattens the annotations of one page.
func flattenPage(xt *model.XRefTable, pageNr int) error {
	page, _, inh, err := xt.PageDict(pageNr, false)
	if err != nil {
		return err
	}
	annots, err := xt.DereferenceArray(page["Annots"])
	if err != nil || len(annots) == 0 {
		return err
	}
	var drawn strings.Builder
	xobjects := map[string]types.Object{}
	flattened := map[int]bool{}
	var kept types.Array
	for i, o := range annots {
		d, err := xt.DereferenceDict(o)
		if err != nil || d == nil {
			continue // a broken annotation is no content: drop it
		}
		draw, keep := annotationFate(xt, d)
		if ir, ok := o.(types.IndirectRef); ok && !keep {
			flattened[ir.ObjectNumber.Value()] = true
		}
		if draw != nil {
			name := fmt.Sprintf("PdfexportFlat%d", i)
			xobjects[name] = *draw.ref
			fmt.Fprintf(&drawn, "q %s cm /%s Do Q\n", draw.cm, name)
		}
		if keep {
			kept = append(kept, o)
		}
	}
	kept = dropOrphanPopups(xt, kept, flattened)
	if len(kept) == 0 {
		page.Delete("Annots")
	} else {
		page["Annots"] = kept
	}
	if drawn.Len() == 0 {
		return nil
	}
	if err := addXObjects(xt, page, inh, xobjects); err != nil {
		return err
	}
	return wrapContents(xt, page, drawn.String())
}

// appearance is an annotation's normal appearance and the matrix that
// puts it on its rectangle.
type appearance struct {
	ref *types.IndirectRef
	cm  string
}

// annotationFate is how an annotation is flattened: the appearance to
// draw (nil: none), and whether the annotation stays.
func annotationFate(xt *model.XRefTable, d types.Dict) (*appearance, bool) {
	subtype := ""
	if n := d.NameEntry("Subtype"); n != nil {
		subtype = *n
	}
	flags := 0
	if f := d.IntEntry("F"); f != nil {
		flags = *f
	}
	if flags&(annotHidden|annotNoView) != 0 {
		return nil, false
	}
	ap := normalAppearance(xt, d)
	if ap == nil {
		return nil, subtype != "Widget"
	}
	return ap, false
}

// normalAppearance is the annotation's /AP /N form (its /AS state's when
// it has states), placed on its /Rect; nil when it has none usable.
func normalAppearance(xt *model.XRefTable, d types.Dict) *appearance {
	apDict, err := xt.DereferenceDict(d["AP"])
	if err != nil || apDict == nil {
		return nil
	}
	n, ok := apDict.Find("N")
	if !ok {
		return nil
	}
	if states, err := xt.DereferenceDict(n); err == nil && states != nil {
		as := d.NameEntry("AS")
		if as == nil {
			return nil
		}
		if n, ok = states.Find(*as); !ok {
			return nil
		}
	}
	ref, ok := n.(types.IndirectRef)
	if !ok {
		return nil
	}
	sd, _, err := xt.DereferenceStreamDict(ref)
	if err != nil || sd == nil {
		return nil
	}
	rect, ok1 := numbers(xt, d["Rect"], 4)
	bbox, ok2 := numbers(xt, sd.Dict["BBox"], 4)
	if !ok1 || !ok2 {
		return nil
	}
	matrix, ok := numbers(xt, sd.Dict["Matrix"], 6)
	if !ok {
		matrix = []float64{1, 0, 0, 1, 0, 0}
	}
	cm, ok := placement(rect, bbox, matrix)
	if !ok {
		return nil
	}
	// Do draws only forms; some writers leave the appearance's type out.
	sd.Dict["Type"] = types.Name("XObject")
	sd.Dict["Subtype"] = types.Name("Form")
	return &appearance{ref: &ref, cm: cm}
}

// placement is the matrix (PDF 32000-1, 12.5.5) that maps the
// appearance's box, transformed by its own matrix, onto the rectangle.
func placement(rect, bbox, m []float64) (string, bool) {
	xs, ys := make([]float64, 0, 4), make([]float64, 0, 4)
	for _, c := range [][2]float64{{bbox[0], bbox[1]}, {bbox[2], bbox[1]}, {bbox[0], bbox[3]}, {bbox[2], bbox[3]}} {
		xs = append(xs, m[0]*c[0]+m[2]*c[1]+m[4])
		ys = append(ys, m[1]*c[0]+m[3]*c[1]+m[5])
	}
	x0, x1 := minMax(xs)
	y0, y1 := minMax(ys)
	rx0, rx1 := minMax([]float64{rect[0], rect[2]})
	ry0, ry1 := minMax([]float64{rect[1], rect[3]})
	if x1-x0 < 1e-9 || y1-y0 < 1e-9 {
		return "", false
	}
	sx, sy := (rx1-rx0)/(x1-x0), (ry1-ry0)/(y1-y0)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return strings.Join([]string{f(sx), "0", "0", f(sy), f(rx0 - x0*sx), f(ry0 - y0*sy)}, " "), true
}

func minMax(v []float64) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return lo, hi
}

// numbers reads an array of n finite numbers.
func numbers(xt *model.XRefTable, o types.Object, n int) ([]float64, bool) {
	a, err := xt.DereferenceArray(o)
	if err != nil || len(a) != n {
		return nil, false
	}
	out := make([]float64, n)
	for i, e := range a {
		v, err := xt.DereferenceNumber(e)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// dropOrphanPopups drops the popups whose annotation was flattened.
func dropOrphanPopups(xt *model.XRefTable, annots types.Array, flattened map[int]bool) types.Array {
	var out types.Array
	for _, o := range annots {
		d, err := xt.DereferenceDict(o)
		if err == nil && d != nil {
			if n := d.NameEntry("Subtype"); n != nil && *n == "Popup" {
				if parent, ok := d["Parent"].(types.IndirectRef); ok && flattened[parent.ObjectNumber.Value()] {
					continue
				}
			}
		}
		out = append(out, o)
	}
	return out
}

// addXObjects names the appearances in the page's resources (its own, or
// a copy of those it inherits).
func addXObjects(xt *model.XRefTable, page types.Dict, inh *model.InheritedPageAttrs, xobjects map[string]types.Object) error {
	res, err := xt.DereferenceDict(page["Resources"])
	if err != nil {
		return err
	}
	if res == nil {
		res = types.NewDict()
		if inh != nil && inh.Resources != nil {
			res = inh.Resources.Clone().(types.Dict)
		}
		page["Resources"] = res
	}
	xo, err := xt.DereferenceDict(res["XObject"])
	if err != nil {
		return err
	}
	if xo == nil {
		xo = types.NewDict()
		res["XObject"] = xo
	}
	for k, v := range xobjects {
		xo[k] = v
	}
	return nil
}

// wrapContents puts the page's content between q and Q, so that no state
// it leaves changes the appearances, and draws them after it.
func wrapContents(xt *model.XRefTable, page types.Dict, drawn string) error {
	var contents types.Array
	switch c := page["Contents"].(type) {
	case nil:
	case types.IndirectRef:
		if a, err := xt.DereferenceArray(c); err == nil && a != nil {
			contents = a
		} else {
			contents = types.Array{c}
		}
	case types.Array:
		contents = c
	default:
		return fmt.Errorf("the page's contents are a %T", c)
	}
	head, err := contentStream(xt, "q\n")
	if err != nil {
		return err
	}
	tail, err := contentStream(xt, "\nQ\n"+drawn)
	if err != nil {
		return err
	}
	page["Contents"] = append(append(types.Array{*head}, contents...), *tail)
	return nil
}

func contentStream(xt *model.XRefTable, s string) (*types.IndirectRef, error) {
	sd, err := xt.NewStreamDictForBuf([]byte(s))
	if err != nil {
		return nil, err
	}
	if err := sd.Encode(); err != nil {
		return nil, err
	}
	return xt.IndRefForNewObject(*sd)
}
