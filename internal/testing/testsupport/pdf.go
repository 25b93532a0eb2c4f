package testsupport

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
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

// PDFText returns the text pdftotext (poppler-utils) extracts from a PDF,
// in its layout (pdfcheck.Poppler.Text).
func PDFText(t testing.TB, pdf []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(path, pdf, 0o600); err != nil {
		t.Fatal(err)
	}
	text, err := pdfcheck.Poppler{Path: path}.Text(context.Background(), pdfcheck.Layout, pdfcheck.AllPages, pdfcheck.AllPages)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// FileSink is a render sink (render.Renderer.Render's) that writes the
// PDF to path.
func FileSink(path string) func(context.Context, io.Reader) error {
	return func(_ context.Context, pdf io.Reader) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, pdf)
		return errors.Join(err, f.Close())
	}
}
