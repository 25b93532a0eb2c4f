package engine

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// pdfBuilder writes a PDF object by object, with a correct xref table.
type pdfBuilder struct {
	objs [][]byte
	// catalog are more entries of the catalog textPages adds.
	catalog string
}

// add adds an object and returns its number.
func (b *pdfBuilder) add(format string, args ...any) int {
	b.objs = append(b.objs, []byte(fmt.Sprintf(format, args...)))
	return len(b.objs)
}

// stream adds a stream of data with the dictionary entries dict, Flate
// compressed when flate.
func (b *pdfBuilder) stream(dict string, data []byte, flate bool) int {
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

// reserve adds an object to be set later and returns its number.
func (b *pdfBuilder) reserve() int { return b.add("null") }

func (b *pdfBuilder) set(nr int, format string, args ...any) {
	b.objs[nr-1] = []byte(fmt.Sprintf(format, args...))
}

// bytes is the PDF with catalog root.
func (b *pdfBuilder) bytes(root int) []byte {
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

// textPages adds a page per text, each showing it, with extra entries in
// its page dictionary; it returns the catalog's number.
func (b *pdfBuilder) textPages(extra func(page int) string, texts ...string) int {
	pages := b.reserve()
	font := b.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	var kids []string
	for i, text := range texts {
		content := b.stream("", []byte(fmt.Sprintf("BT /F1 24 Tf 40 700 Td (%s) Tj ET", text)), false)
		more := ""
		if extra != nil {
			more = extra(i + 1)
		}
		page := b.add("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R %s >>", pages, font, content, more)
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	b.set(pages, "<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(texts))
	return b.add("<< /Type /Catalog /Pages %d 0 R %s >>", pages, b.catalog)
}

// pagedPDF is a PDF of one page per text.
func pagedPDF(texts ...string) []byte {
	var b pdfBuilder
	return b.bytes(b.textPages(nil, texts...))
}

// numberedPDF is a PDF of n pages showing "Page 1" to "Page n".
func numberedPDF(n int) []byte {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("Page %d", i+1)
	}
	return pagedPDF(texts...)
}

// readBack reads a PDF an operation wrote.
func readBack(t *testing.T, pdf []byte) *model.Context {
	t.Helper()
	ctx, err := readPDF(pdf)
	if err != nil {
		t.Fatalf("the output does not read back: %v", err)
	}
	return ctx
}

// pageContent is the content of a page (from 1), decoded.
func pageContent(t *testing.T, ctx *model.Context, page int) string {
	t.Helper()
	r, err := pdfcpu.ExtractPageContent(ctx, page)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
