package gotenberg

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// The failures of a render under the page options, in Gotenberg's words
// and statuses. The worker names each kind (spec.Failed*) and lists its
// offenders a line each; its error reaches bin/api as the task's text.

// pageFailureWords are Gotenberg's answer to each kind.
var pageFailureWords = []struct {
	kind, words string
}{
	{spec.FailedResourceStatus, "Invalid HTTP status code from resources:\n"},
	{spec.FailedConsoleExceptions, "Chromium console exceptions:\n"},
	{spec.FailedResourceLoading, "Chromium failed to load resources: "},
}

// asynqSkipRetry is what the queue appends to a failure not retried.
const asynqSkipRetry = ": skip retry for the task"

// mainStatus is the worker's words for the main document's status (a
// render.StatusError): its code and text.
var mainStatus = regexp.MustCompile(`HTTP error status: (\d{3}) ([^(]*) \(`)

// pageFailedErr is Gotenberg's answer to the failure msg when it is one
// of the page options' (409), else nil.
func pageFailedErr(msg string) error {
	for _, w := range pageFailureWords {
		marker := "page errors (" + w.kind + "):\n"
		i := strings.Index(msg, marker)
		if i < 0 {
			continue
		}
		lines := strings.TrimSuffix(msg[i+len(marker):], asynqSkipRetry)
		return &httpError{status: http.StatusConflict, msg: w.words + lines}
	}
	if m := mainStatus.FindStringSubmatch(msg); m != nil {
		return &httpError{status: http.StatusConflict, msg: "Invalid HTTP status code from the main page: " + m[1] + ": " + strings.TrimSpace(m[2])}
	}
	return nil
}
