package render

// What the page options (spec.PageOptions) fail a render on: sub-resources
// answering a listed status, sub-resources that could not load, uncaught
// exceptions. The page watch records them as they happen (apart from the
// warnings, which are the /v1 report and bounded alike), checkPage judges
// them before the print.

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// maxPageFailures bounds each list of pageFailures.
const maxPageFailures = 100

// pageFailures are the events of one page the page options judge.
type pageFailures struct {
	mu         sync.Mutex
	statuses   []resourceStatus
	loading    []string // "resource Stylesheet: net::ERR_…"
	exceptions []string
}

type resourceStatus struct {
	url  string
	code int
}

func (f *pageFailures) onResponse(ev *network.EventResponseReceived, mainDoc bool) {
	r := ev.Response
	if f == nil || r == nil || mainDoc || r.Status < 300 {
		return
	}
	if egressRefused(r.Headers) {
		f.addLoading(ev.Type, "net::ERR_CONNECTION_REFUSED (refused by the egress guard)")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.statuses) < maxPageFailures {
		f.statuses = append(f.statuses, resourceStatus{url: r.URL, code: int(r.Status)})
	}
}

// loadingErrors are the errors of a sub-resource that could not load which
// fail it (Gotenberg's list): a page that gave up on a request, or a
// request Chromium refused on its own policy, is not among them.
var loadingErrors = []string{
	"net::ERR_CONNECTION_CLOSED", "net::ERR_CONNECTION_RESET", "net::ERR_CONNECTION_REFUSED",
	"net::ERR_CONNECTION_ABORTED", "net::ERR_CONNECTION_FAILED", "net::ERR_NAME_NOT_RESOLVED",
	"net::ERR_INTERNET_DISCONNECTED", "net::ERR_ADDRESS_UNREACHABLE", "net::ERR_BLOCKED_BY_RESPONSE",
	"net::ERR_FILE_NOT_FOUND", "net::ERR_HTTP2_PROTOCOL_ERROR", "net::ERR_TUNNEL_CONNECTION_FAILED",
}

func (f *pageFailures) onLoadingFailed(ev *network.EventLoadingFailed, url string, mainDoc bool) {
	if f == nil || mainDoc || ev.Canceled {
		return
	}
	text := ev.ErrorText
	switch {
	case strings.HasPrefix(url, spec.MissingFilePrefix):
		text = "net::ERR_FILE_NOT_FOUND"
	case strings.Contains(text, "ERR_BLOCKED_BY_CLIENT"):
		// The request guard's refusal: to the page, a connection refused.
		text = "net::ERR_CONNECTION_REFUSED (refused: not on ALLOWED_HOSTS)"
	case !containsString(loadingErrors, text):
		return
	}
	f.addLoading(ev.Type, text)
}

func (f *pageFailures) addLoading(t network.ResourceType, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.loading) < maxPageFailures {
		f.loading = append(f.loading, fmt.Sprintf("resource %s: %s", t, text))
	}
}

func (f *pageFailures) onException(ev *runtime.EventExceptionThrown) {
	d := ev.ExceptionDetails
	if f == nil || d == nil {
		return
	}
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
	}
	where := d.URL
	if where == "" && d.StackTrace != nil && len(d.StackTrace.CallFrames) > 0 {
		where = d.StackTrace.CallFrames[0].URL
	}
	line := fmt.Sprintf("%s (%s:%d:%d)", truncate(msg, maxWarningMessage), shortURL(where), d.LineNumber, d.ColumnNumber)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.exceptions) < maxPageFailures {
		f.exceptions = append(f.exceptions, line)
	}
}

// failure is the ErrPageErrors error of what p fails the page on, in the
// order Gotenberg checks: resource statuses, exceptions, resources not
// loaded; nil when p fails it on nothing recorded.
func (f *pageFailures) failure(p *spec.PageOptions) error {
	if f == nil || p == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var lines []string
	for _, s := range f.statuses {
		if spec.StatusListed(p.FailOnResourceHTTPStatus, s.code) && !spec.IgnoredDomain(hostOf(s.url), p.IgnoreResourceDomains) {
			lines = append(lines, fmt.Sprintf("%s - %d: %s", shortURL(s.url), s.code, http.StatusText(s.code)))
		}
	}
	if len(lines) > 0 {
		return pageFailure(spec.FailedResourceStatus, lines)
	}
	if p.FailOnConsoleExceptions && len(f.exceptions) > 0 {
		return pageFailure(spec.FailedConsoleExceptions, f.exceptions)
	}
	if p.FailOnResourceLoadingFailed && len(f.loading) > 0 {
		return pageFailure(spec.FailedResourceLoading, f.loading)
	}
	return nil
}

func pageFailure(check string, lines []string) error {
	return &PageFailure{Check: check, Offenders: lines}
}

// PageFailure is the ErrPageErrors error of a render under page options:
// the check that failed it (one of spec.Failed*) and its offenders, one
// line each, which a caller words its own way.
type PageFailure struct {
	Check     string
	Offenders []string
}

func (e *PageFailure) Error() string {
	return fmt.Sprintf("%v (%s):\n%s", ErrPageErrors, e.Check, strings.Join(e.Offenders, "\n"))
}

// Is makes errors.Is(err, ErrPageErrors) true.
func (e *PageFailure) Is(target error) bool { return target == ErrPageErrors }

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

func containsString(list []string, s string) bool { return slices.Contains(list, s) }
