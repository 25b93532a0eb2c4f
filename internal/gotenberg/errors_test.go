package gotenberg

import (
	"testing"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestFailedErr: a failed export's kind, not its text, picks the status.
func TestFailedErr(t *testing.T) {
	for _, c := range []struct {
		kind, msg string
		status    int
		answer    string
	}{
		{spec.FailurePageErrors, "page errors: 1 console error", 409, "The conversion failed: page errors: 1 console error"},
		{spec.FailureHTTPStatus, "404", 409, "The conversion failed: 404"},
		{spec.FailurePageRanges, "no page", 400, "The conversion failed: no page"},
		{spec.FailureBlocked, "blocked", 403, "The conversion failed: blocked"},
		{spec.FailureTimeout, "render timed out", 503, "Service Unavailable"},
		{"", "timed out, page errors, blocked by the host allowlist", 500, "The conversion failed: timed out, page errors, blocked by the host allowlist"},
		{spec.FailureLimit, "PDF over a limit", 500, "The conversion failed: PDF over a limit"},
		{spec.FailureNoElement, "capture: the selector '#x' matched no element with a visible box", 400, "The conversion failed: capture: the selector '#x' matched no element with a visible box"},
	} {
		status, msg := statusOf(failedErr(exportclient.Status{State: exportclient.StateFailed, Kind: c.kind, Error: c.msg}))
		if status != c.status || msg != c.answer {
			t.Errorf("kind %q: %d %q, want %d %q", c.kind, status, msg, c.status, c.answer)
		}
	}
}
