package gotenberg

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// httpError is an answer in Gotenberg's shape: a status and a plain-text
// message, which Gotenberg's clients surface to their callers as is.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// unsupported refuses a field whose value asks for what pdfexport does
// not do; the message names the field, as Gotenberg's form errors do.
func unsupported(field, why string) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf("form field '%s' is not supported by pdfexport: %s", field, why)}
}

// writeError answers err: its own status for an *httpError, 500 for
// anything else (with Gotenberg's bare status text, the cause is logged).
func writeError(w http.ResponseWriter, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{status: http.StatusInternalServerError, msg: http.StatusText(http.StatusInternalServerError)}
	}
	writeText(w, he.status, he.msg)
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(strings.TrimRight(msg, "\n")))
}

// statusOf is the status and message Gotenberg would answer err with.
func statusOf(err error) (int, string) {
	var he *httpError
	if errors.As(err, &he) {
		return he.status, he.msg
	}
	return http.StatusInternalServerError, http.StatusText(http.StatusInternalServerError)
}

// failureStatus maps a failed export's kind (exportclient.Status.Kind,
// which the worker records from its render's error) to Gotenberg's status
// for it: 409 for what the failOn* fields (and a failing main page)
// refuse, 400 for page ranges the document does not have, 403 for a URL
// the allowlist refuses during the render, 503 for a time-out. A kind not
// here is a 500.
var failureStatus = map[string]int{
	spec.FailurePageErrors: http.StatusConflict,
	spec.FailureHTTPStatus: http.StatusConflict,
	spec.FailurePageRanges: http.StatusBadRequest,
	spec.FailureBlocked:    http.StatusForbidden,
	spec.FailureTimeout:    http.StatusServiceUnavailable,
	spec.FailureNoElement:  http.StatusBadRequest,
}

// failedErr is the answer to a failed export: its kind's status with the
// worker's message, or for a time-out Gotenberg's bare 503.
func failedErr(st exportclient.Status) error {
	if err := detailedErr(st.Kind, st.Detail); err != nil {
		return err
	}
	status, ok := failureStatus[st.Kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	if status == http.StatusServiceUnavailable {
		return &httpError{status: status, msg: http.StatusText(status)}
	}
	return &httpError{status: status, msg: "The conversion failed: " + st.Error}
}
