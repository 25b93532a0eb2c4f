package harness

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// PDFPages is the page count pdfinfo (poppler-utils) reads from the PDF at
// path: an independent check of a PDF the renderer counted itself.
func PDFPages(path string) (int, error) {
	out, err := exec.Command("pdfinfo", path).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pdfinfo %s: %v: %s (make setup installs poppler-utils)", path, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Pages:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return 0, fmt.Errorf("pdfinfo %s: page count %q", path, strings.TrimSpace(v))
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("pdfinfo %s printed no page count:\n%s", path, out)
}
