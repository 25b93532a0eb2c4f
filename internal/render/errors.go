package render

import (
	"errors"
	"fmt"
)

// Sentinel errors. Render wraps exactly one of them (with %w) in every error it
// returns for a failed render, except when the caller's own context was
// canceled: then the error wraps context.Cause of that context.
var (
	// ErrTimeout: the render did not finish before Config.Timeout or the
	// deadline of the caller's context, whichever came first. This includes
	// a WaitFor expression that never became truthy. The next render is not
	// affected.
	ErrTimeout = errors.New("render timed out")

	// ErrNavigation: the main document could not be loaded (DNS or connection
	// failure, TLS error, a download instead of a page, a tab whose renderer
	// process crashed) or the source was malformed.
	ErrNavigation = errors.New("page failed to load")

	// ErrHTTPStatus: the main document answered with an HTTP status of 400 or
	// more. The error is a *StatusError that names the status.
	ErrHTTPStatus = errors.New("page answered with an HTTP error status")

	// ErrBlocked: the source URL, or a navigation of the main frame (a redirect,
	// a meta refresh, a script), targets a host that is not on the allowlist or
	// a scheme other than http(s), data:, blob: or about:.
	ErrBlocked = errors.New("request blocked by the host allowlist")

	// ErrPrint: Page.printToPDF failed or the PDF stream could not be read.
	ErrPrint = errors.New("printing the PDF failed")

	// ErrBrowserCrashed: Chromium could not be started, or it exited or lost
	// its DevTools connection while the render ran. The next render starts a
	// new browser.
	ErrBrowserCrashed = errors.New("browser crashed")

	// ErrClosed: Close was called before or while the render ran.
	ErrClosed = errors.New("renderer closed")

	// ErrLimit: the PDF grew past Config.MaxPages or Config.MaxBytes; the
	// stream was cut off. Not retryable: the same page prints the same PDF.
	ErrLimit = errors.New("PDF over a limit")

	// ErrPageErrors: the page had warnings that the print settings' FailOn
	// fails on (fail_on_resource_errors, fail_on_console_errors); nothing
	// was printed. Not retryable: the options asked for a final failure.
	ErrPageErrors = errors.New("page errors")

	// ErrPageRanges: the print settings' page ranges select no page of the
	// document (it comes with ErrPrint). Not retryable.
	ErrPageRanges = errors.New("page_ranges")

	// ErrSink: the sink returned an error (which this error wraps too), or it
	// returned nil before it read the PDF to the end.
	ErrSink = errors.New("PDF sink failed")
)

// StatusError is the error of a main document with an HTTP status >= 400. It
// matches ErrHTTPStatus with errors.Is.
type StatusError struct {
	Code int
	Text string
	URL  string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%v: %d %s (%s)", ErrHTTPStatus, e.Code, e.Text, e.URL)
}

// Is makes errors.Is(err, ErrHTTPStatus) true.
func (e *StatusError) Is(target error) bool { return target == ErrHTTPStatus }

// permanent marks an error that a retry cannot fix even though its sentinel is
// usually transient, e.g. ErrPrint for page ranges that select no page.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// Retryable reports whether running the same render again may succeed:
// true for ErrTimeout, ErrNavigation, ErrBrowserCrashed, ErrPrint (except for
// invalid page ranges), ErrClosed (another worker can do it) and HTTP statuses
// 408, 429 and 5xx; false for other HTTP statuses, ErrBlocked and everything
// else, including ErrSink and the caller's own cancellation, which the caller
// judges.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var p permanent
	if errors.As(err, &p) {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code == 408 || se.Code == 429 || se.Code >= 500
	}
	switch {
	case errors.Is(err, ErrBlocked), errors.Is(err, ErrSink):
		return false
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrNavigation),
		errors.Is(err, ErrBrowserCrashed), errors.Is(err, ErrPrint), errors.Is(err, ErrClosed):
		return true
	}
	return false
}
