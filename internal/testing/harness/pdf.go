package harness

import (
	"context"

	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
)

// PDFInfo is what pdfinfo (poppler-utils) prints about the PDF at path, as
// its "Field: value" lines ("Pages", "Tagged", "Page size", …), values
// trimmed (pdfcheck.Poppler.Info).
func PDFInfo(path string) (map[string]string, error) {
	return pdfcheck.Poppler{Path: path}.Info(context.Background())
}

// PDFPages is the page count pdfinfo (poppler-utils) reads from the PDF at
// path: an independent check of a PDF the renderer counted itself.
func PDFPages(path string) (int, error) {
	return pdfcheck.Poppler{Path: path}.Pages(context.Background())
}
