package testsupport

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// PDFBuilder writes a PDF object by object, with a correct xref table,
// for tests that need a document of a given make.
type PDFBuilder struct {
	objs [][]byte
	// Catalog are more entries of the catalog TextPages adds.
	Catalog string
}

// Add adds an object and returns its number.
func (b *PDFBuilder) Add(format string, args ...any) int {
	b.objs = append(b.objs, []byte(fmt.Sprintf(format, args...)))
	return len(b.objs)
}

// Stream adds a stream of data with the dictionary entries dict, Flate
// compressed when flate.
func (b *PDFBuilder) Stream(dict string, data []byte, flate bool) int {
	if flate {
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		_, _ = zw.Write(data)
		_ = zw.Close()
		data, dict = z.Bytes(), dict+" /Filter /FlateDecode"
	}
	obj := append([]byte(fmt.Sprintf("<< %s /Length %d >>\nstream\n", dict, len(data))), data...)
	b.objs = append(b.objs, append(obj, []byte("\nendstream")...))
	return len(b.objs)
}

// Reserve adds an object to be set later and returns its number.
func (b *PDFBuilder) Reserve() int { return b.Add("null") }

func (b *PDFBuilder) Set(nr int, format string, args ...any) {
	b.objs[nr-1] = []byte(fmt.Sprintf(format, args...))
}

// Bytes is the PDF with catalog root.
func (b *PDFBuilder) Bytes(root int) []byte {
	var out bytes.Buffer
	out.WriteString("%PDF-1.7\n")
	offsets := make([]int, len(b.objs))
	for i, o := range b.objs {
		offsets[i] = out.Len()
		fmt.Fprintf(&out, "%d 0 obj\n", i+1)
		out.Write(o)
		out.WriteString("\nendobj\n")
	}
	xref := out.Len()
	fmt.Fprintf(&out, "xref\n0 %d\n0000000000 65535 f \n", len(b.objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&out, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&out, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(b.objs)+1, root, xref)
	return out.Bytes()
}

// TextPages adds a page per text, each showing it, with extra entries in
// its page dictionary; it returns the catalog's number.
func (b *PDFBuilder) TextPages(extra func(page int) string, texts ...string) int {
	pages := b.Reserve()
	font := b.Add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	var kids []string
	for i, text := range texts {
		content := b.Stream("", []byte(fmt.Sprintf("BT /F1 24 Tf 40 700 Td (%s) Tj ET", text)), false)
		more := ""
		if extra != nil {
			more = extra(i + 1)
		}
		page := b.Add("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R %s >>", pages, font, content, more)
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	b.Set(pages, "<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(texts))
	return b.Add("<< /Type /Catalog /Pages %d 0 R %s >>", pages, b.Catalog)
}

// TextPDF is a PDF of one page per text, each page showing it.
func TextPDF(texts ...string) []byte {
	var b PDFBuilder
	return b.Bytes(b.TextPages(nil, texts...))
}

// NumberedPDF is a PDF of n pages showing "Page 1" to "Page n".
func NumberedPDF(n int) []byte {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("Page %d", i+1)
	}
	return TextPDF(texts...)
}

// Photo is w x h samples of comp components that look like a photo to a
// compressor: smooth shapes and grain, which Flate keeps large and JPEG
// does not.
func Photo(w, h, comp int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]byte, 0, w*h*comp)
	for y := range h {
		for x := range w {
			for c := range comp {
				v := 128 + 90*math.Sin(float64(x+40*c)/23)*math.Cos(float64(y)/31) + float64(rng.IntN(41)-20)
				out = append(out, byte(max(0, min(255, v))))
			}
		}
	}
	return out
}
