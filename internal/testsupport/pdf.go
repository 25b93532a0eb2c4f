package testsupport

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// PDFPages returns the page count pdfinfo (poppler-utils) reads from a PDF
// file, failing the test when the file is not a readable PDF.
func PDFPages(t testing.TB, path string) int {
	t.Helper()
	out, err := exec.Command("pdfinfo", path).CombinedOutput()
	if err != nil {
		t.Fatalf("pdfinfo %s: %v\n%s (make setup installs poppler-utils)", path, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Pages:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("pdfinfo %s: page count %q", path, v)
			}
			return n
		}
	}
	t.Fatalf("pdfinfo %s printed no page count:\n%s", path, out)
	return 0
}
