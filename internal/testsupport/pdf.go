package testsupport

import (
	"testing"

	"github.com/pdfexport/pdfexport/internal/harness"
)

// PDFPages returns the page count pdfinfo (poppler-utils) reads from a PDF
// file, failing the test when the file is not a readable PDF.
func PDFPages(t testing.TB, path string) int {
	t.Helper()
	n, err := harness.PDFPages(path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
