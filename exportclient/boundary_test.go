package exportclient_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBoundary_LinksNoWorkerCode: an API server that imports the client
// links none of the worker's network and browser code: not the egress
// proxy (with its TLS interception and peer guard), proctree, chromedp or
// the AWS SDK.
func TestBoundary_LinksNoWorkerCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, forbidden := range []string{
		"github.com/pdfexport/pdfexport/internal/render/egress",
		"github.com/pdfexport/pdfexport/internal/render/proctree",
		"github.com/pdfexport/pdfexport/internal/render",
		"github.com/pdfexport/pdfexport/internal/storage",
		"github.com/pdfexport/pdfexport/internal/tasks/export",
		"github.com/chromedp/",
		"github.com/aws/",
	} {
		for _, d := range deps {
			if d == forbidden || strings.HasSuffix(forbidden, "/") && strings.HasPrefix(d, forbidden) {
				t.Errorf("exportclient links %s", d)
			}
		}
	}
}
