package engine

import (
	"io"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

var (
	numberedPDF = testsupport.NumberedPDF
	photo       = testsupport.Photo
)

type pdfBuilder = testsupport.PDFBuilder

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
