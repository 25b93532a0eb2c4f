package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// formPDF is a one-page PDF with a form (a text field and a checked box,
// both with appearances, a field without one), a hidden annotation, a
// note with its popup and a link.
func formPDF() []byte {
	var b pdfBuilder
	font := b.Add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	ap := func(text string) int {
		return b.Stream(fmt.Sprintf("/Type /XObject /Subtype /Form /BBox [0 0 100 20] /Resources << /Font << /F1 %d 0 R >> >>", font),
			[]byte("BT /F1 12 Tf 2 5 Td ("+text+") Tj ET"), true)
	}
	text := b.Add("<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /DA (/F1 12 Tf 0 g) /Rect [100 100 300 140] /AP << /N %d 0 R >> >>", ap("Filled"))
	on, off := ap("On"), ap("Off")
	box := b.Add("<< /Type /Annot /Subtype /Widget /FT /Btn /T (box) /Rect [100 200 120 220] /AS /On /AP << /N << /On %d 0 R /Off %d 0 R >> >> >>", on, off)
	bare := b.Add("<< /Type /Annot /Subtype /Widget /FT /Tx /T (bare) /DA (/F1 12 Tf 0 g) /Rect [0 0 10 10] >>")
	hidden := b.Add("<< /Type /Annot /Subtype /Square /F 2 /Rect [0 0 10 10] /AP << /N %d 0 R >> >>", ap("Hidden"))
	popup := b.Reserve()
	note := b.Add("<< /Type /Annot /Subtype /Text /Rect [400 400 420 420] /Popup %d 0 R /AP << /N %d 0 R >> >>", popup, ap("Note"))
	b.Set(popup, "<< /Type /Annot /Subtype /Popup /Rect [400 300 500 400] /Parent %d 0 R >>", note)
	link := b.Add("<< /Type /Annot /Subtype /Link /Rect [0 700 100 720] /A << /S /URI /URI (https://example.com/) >> >>")
	annots := fmt.Sprintf("/Annots [%d 0 R %d 0 R %d 0 R %d 0 R %d 0 R %d 0 R %d 0 R]", text, box, bare, hidden, note, popup, link)
	b.Catalog = fmt.Sprintf("/AcroForm << /Fields [%d 0 R %d 0 R %d 0 R] /DA (/F1 12 Tf 0 g) >>", text, box, bare)
	return b.Bytes(b.TextPages(func(int) string { return annots }, "Form"))
}

// TestFlatten: appearances become page content, placed on their
// rectangles; the form and the flattened, hidden and appearance-less
// fields go, the link stays.
func TestFlatten(t *testing.T) {
	doc := formPDF()
	if c := readBack(t, doc); c.PageCount != 1 {
		t.Fatalf("the fixture has %d pages", c.PageCount)
	}
	out, err := Flatten(context.Background(), doc, FlattenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := readBack(t, out)
	page, _, _, err := ctx.PageDict(1, false)
	if err != nil {
		t.Fatal(err)
	}
	annots, _ := ctx.DereferenceArray(page["Annots"])
	if len(annots) != 1 {
		t.Fatalf("annotations left: %v, want the link only", annots)
	}
	if d, _ := ctx.DereferenceDict(annots[0]); d.NameEntry("Subtype") == nil || *d.NameEntry("Subtype") != "Link" {
		t.Errorf("the annotation left is %v, want the link", d)
	}
	if root, _ := ctx.Catalog(); root["AcroForm"] != nil {
		t.Error("the AcroForm is still there")
	}
	content := pageContent(t, ctx, 1)
	for _, want := range []string{"(Form) Tj", "2 0 0 2 100 100 cm", "0.2 0 0 1 100 200 cm", "400 400 cm"} {
		if !strings.Contains(content, want) {
			t.Errorf("page content lacks %q:\n%s", want, content)
		}
	}
	if n := strings.Count(content, " Do Q"); n != 3 {
		t.Errorf("%d appearances drawn, want 3 (field, box, note):\n%s", n, content)
	}
	res, _ := ctx.DereferenceDict(page["Resources"])
	xo, _ := ctx.DereferenceDict(res["XObject"])
	if len(xo) != 3 {
		t.Errorf("XObjects %v, want the 3 appearances", xo)
	}
	for _, o := range xo {
		sd, _, err := ctx.DereferenceStreamDict(o)
		if err != nil || sd == nil || sd.Dict["Subtype"] != types.Name("Form") {
			t.Errorf("an appearance is not a form XObject: %v %v", sd, err)
		}
	}
}

// TestFlattenWithoutAnnotations: a PDF without annotations comes out with
// its pages as they were.
func TestFlattenWithoutAnnotations(t *testing.T) {
	out, err := Flatten(context.Background(), numberedPDF(2), FlattenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := readBack(t, out)
	if ctx.PageCount != 2 || !strings.Contains(pageContent(t, ctx, 2), "(Page 2)") {
		t.Errorf("%d pages, page 2 %q", ctx.PageCount, pageContent(t, ctx, 2))
	}
}
