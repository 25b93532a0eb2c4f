package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// TestFailureKind: a failed attempt's kind comes from the render's
// sentinel however deep it is wrapped, and finalOf records it.
func TestFailureKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		kind string
	}{
		{fmt.Errorf("render: %w", render.ErrTimeout), spec.FailureTimeout},
		{fmt.Errorf("x: %w: %w", &render.StatusError{Code: 404, Text: "Not Found"}, asynq.SkipRetry), spec.FailureHTTPStatus},
		{fmt.Errorf("%w: 2 console errors", render.ErrPageErrors), spec.FailurePageErrors},
		{fmt.Errorf("%w: the egress proxy refused x", render.ErrBlocked), spec.FailureBlocked},
		{fmt.Errorf("%w: %w \"9\": no page", render.ErrPrint, render.ErrPageRanges), spec.FailurePageRanges},
		{fmt.Errorf("%w: 600 pages", render.ErrLimit), spec.FailureLimit},
		{fmt.Errorf("capture: %w: the selector", render.ErrNoElement), spec.FailureNoElement},
		{fmt.Errorf("%w: dns", render.ErrNavigation), ""},
		{errors.New("storage down"), ""},
	} {
		if got := failureKind(c.err); got != c.kind {
			t.Errorf("%v: kind %q, want %q", c.err, got, c.kind)
		}
		if f := finalOf("t1", nil, nil, verdictFailed, c.err); f.Kind != c.kind || f.Error != c.err.Error() || f.State != spec.StateFailed {
			t.Errorf("%v: final %+v", c.err, f)
		}
	}
}

// TestFailureDetail: what a failure names comes from the render's typed
// error however deep it is wrapped; a kind with nothing to name, or an
// error of no kind, records none.
func TestFailureDetail(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"page failure", fmt.Errorf("rendering k: %w: %w", &render.PageFailure{Check: spec.FailedConsoleExceptions, Offenders: []string{"Error: x (a:1:2)"}}, asynq.SkipRetry),
			`{"check":"console exceptions","offenders":["Error: x (a:1:2)"]}`},
		{"main status", fmt.Errorf("x: %w", &render.StatusError{Code: 410, Text: "Gone", URL: "http://a/"}), `{"status":410,"status_text":"Gone"}`},
		{"selector", fmt.Errorf("capture: %w", &render.NoElementError{Selector: "#x"}), `{"selector":"#x"}`},
		{"a sentinel without detail", fmt.Errorf("%w: 2 console errors", render.ErrPageErrors), "null"},
		{"no kind", errors.New("storage down"), "null"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := finalOf("t1", nil, nil, verdictFailed, c.err)
			if got, _ := json.Marshal(f.Detail); string(got) != c.want {
				t.Errorf("detail %s, want %s", got, c.want)
			}
		})
	}
}
