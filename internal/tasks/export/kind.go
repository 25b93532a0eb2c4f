package export

import (
	"errors"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// failureKind is the spec.Failure kind of a failed attempt's error, from
// the render's sentinels; "" for a failure with no kind of its own.
func failureKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, render.ErrPageRanges):
		return spec.FailurePageRanges
	case errors.Is(err, render.ErrPageErrors):
		return spec.FailurePageErrors
	case errors.Is(err, render.ErrHTTPStatus):
		return spec.FailureHTTPStatus
	case errors.Is(err, render.ErrBlocked):
		return spec.FailureBlocked
	case errors.Is(err, render.ErrTimeout):
		return spec.FailureTimeout
	case errors.Is(err, render.ErrLimit):
		return spec.FailureLimit
	case errors.Is(err, render.ErrNoElement):
		return spec.FailureNoElement
	}
	return ""
}

// failureDetail is what err's kind names, from the render's typed errors;
// nil for a failure that names nothing of its own.
func failureDetail(err error) *spec.FailureDetail {
	var pf *render.PageFailure
	var se *render.StatusError
	var ne *render.NoElementError
	switch {
	case errors.As(err, &pf):
		return &spec.FailureDetail{Check: pf.Check, Offenders: pf.Offenders}
	case errors.As(err, &se):
		return &spec.FailureDetail{Status: se.Code, StatusText: se.Text}
	case errors.As(err, &ne):
		return &spec.FailureDetail{Selector: ne.Selector}
	}
	return nil
}
