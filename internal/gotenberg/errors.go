package gotenberg

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
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
