package gotenberg

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The failures of a render under the page options, in Gotenberg's words
// and statuses, from what the worker records of each (Final.Kind and
// Final.Detail), never from the text of its error.

// pageFailureWords are Gotenberg's answer to each failed check.
var pageFailureWords = map[string]string{
	spec.FailedResourceStatus:    "Invalid HTTP status code from resources:\n",
	spec.FailedConsoleExceptions: "Chromium console exceptions:\n",
	spec.FailedResourceLoading:   "Chromium failed to load resources: ",
}

// detailedErr is Gotenberg's answer to a failure of kind whose detail
// names what failed, or nil when the failure names nothing Gotenberg words
// (a worker of a release that records no detail, say).
func detailedErr(kind string, d *exportclient.FailureDetail) error {
	if d == nil {
		return nil
	}
	switch kind {
	case spec.FailurePageErrors:
		if words, ok := pageFailureWords[d.Check]; ok {
			return &httpError{status: http.StatusConflict, msg: words + strings.Join(d.Offenders, "\n")}
		}
	case spec.FailureHTTPStatus:
		if d.Status != 0 {
			return &httpError{status: http.StatusConflict, msg: fmt.Sprintf("Invalid HTTP status code from the main page: %d: %s", d.Status, strings.TrimSpace(d.StatusText))}
		}
	case spec.FailureNoElement:
		if d.Selector != "" {
			return badRequest("The selector '%s' (selector) matched no element with a visible box", printable(d.Selector))
		}
	}
	return nil
}
