package harness

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// PDFInfo is what pdfinfo (poppler-utils) prints about the PDF at path, as
// its "Field: value" lines ("Pages", "Tagged", "Page size", …), values
// trimmed. It is the one parser of pdfinfo's output; PDFPages reads the
// page count from it.
func PDFInfo(path string) (map[string]string, error) {
	out, err := exec.Command("pdfinfo", path).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("pdfinfo %s: %v: %s (make setup installs poppler-utils)", path, err, out)
	}
	return parsePDFInfo(string(out)), nil
}

func parsePDFInfo(out string) map[string]string {
	info := map[string]string{}
	for line := range strings.SplitSeq(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			info[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return info
}

// PDFPages is the page count pdfinfo (poppler-utils) reads from the PDF at
// path: an independent check of a PDF the renderer counted itself.
func PDFPages(path string) (int, error) {
	info, err := PDFInfo(path)
	if err != nil {
		return 0, err
	}
	v, ok := info["Pages"]
	if !ok {
		return 0, fmt.Errorf("pdfinfo %s printed no page count", path)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("pdfinfo %s: page count %q", path, v)
	}
	return n, nil
}
