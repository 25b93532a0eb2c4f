package render

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"

	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The render-quality report: what the page could not load and what its
// scripts reported as errors, so that a PDF missing its diagram says so.
// Sources: the tab's Network events (sub-resources that failed or answered
// ≥ 400; the main document's failures fail the render instead), the guard
// (requests it blocked), the egress proxy's refusals (a 403 it marks), and
// Runtime (uncaught exceptions, console.error).

// maxWarningMessage bounds one warning's message: a page can log anything.
const maxWarningMessage = 300

// warnings collects the warnings of one render, at most spec.MaxWarnings,
// each once, counting the rest.
type warnings struct {
	mu       sync.Mutex
	list     []spec.Warning
	omitted  int
	unlisted map[string]int // omitted, by kind
	seen     map[spec.Warning]bool
	observe  func(kind string) // counts every warning, listed or not
}

func newWarnings(observe func(string)) *warnings {
	if observe == nil {
		observe = func(string) {}
	}
	return &warnings{seen: map[spec.Warning]bool{}, unlisted: map[string]int{}, observe: observe}
}

func (w *warnings) add(x spec.Warning) {
	x.URL = shortURL(x.URL)
	x.Message = truncate(strings.TrimSpace(x.Message), maxWarningMessage)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[x] {
		return
	}
	w.seen[x] = true
	w.observe(x.Kind)
	if len(w.list) >= spec.MaxWarnings {
		w.omitted++
		w.unlisted[x.Kind]++
		return
	}
	w.list = append(w.list, x)
}

// result returns the warnings listed and how many more there were.
func (w *warnings) result() ([]spec.Warning, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]spec.Warning(nil), w.list...), w.omitted
}

// failure is an ErrPageErrors naming the first offenders when f fails on
// any warning collected, else nil.
func (w *warnings) failure(f spec.FailOn) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	unlisted := 0
	for kind, n := range w.unlisted {
		if f.Offends(spec.Warning{Kind: kind}) {
			unlisted += n
		}
	}
	return PageErrors(f, w.list, unlisted)
}

// PageErrors is the ErrPageErrors error for the warnings f fails on (the
// first three named, a count of the rest), or nil when there are none.
// unlisted are offending warnings beyond the list.
func PageErrors(f spec.FailOn, list []spec.Warning, unlisted int) error {
	var offenders []string
	n := 0
	for _, x := range list {
		if f.Offends(x) {
			n++
			if len(offenders) < 3 {
				offenders = append(offenders, x.String())
			}
		}
	}
	n += unlisted
	if n == 0 {
		return nil
	}
	more := ""
	if n > len(offenders) {
		more = fmt.Sprintf(" and %d more", n-len(offenders))
	}
	var options []string
	if f.ResourceErrors {
		options = append(options, "fail_on_resource_errors")
	}
	if f.ConsoleErrors {
		options = append(options, "fail_on_console_errors")
	}
	return fmt.Errorf("%w (%s): %s%s", ErrPageErrors, strings.Join(options, ", "), strings.Join(offenders, "; "), more)
}

// onNetwork turns a failed or refused sub-resource into a warning. url is
// the request's URL as the watch recorded it.
func (w *warnings) onResponse(ev *network.EventResponseReceived, mainFrameDoc bool) {
	r := ev.Response
	if r == nil || r.Status < 400 || mainFrameDoc || browserFavicon(ev.Type, r.URL) {
		return
	}
	if egressRefused(r.Headers) {
		w.add(spec.Warning{Kind: spec.WarningBlocked, URL: r.URL, Message: "refused by the egress guard"})
		return
	}
	w.add(spec.Warning{Kind: spec.WarningResource, URL: r.URL, Status: int(r.Status), Message: r.StatusText})
}

func (w *warnings) onLoadingFailed(ev *network.EventLoadingFailed, url string, mainFrameDoc bool) {
	switch {
	case ev.Canceled || mainFrameDoc || browserFavicon(ev.Type, url):
		return // the page gave up on it, or the render fails on it
	case strings.Contains(ev.ErrorText, "ERR_BLOCKED_BY_CLIENT"):
		return // the guard's own refusal: it reports it with its reason
	case ev.BlockedReason != "":
		w.add(spec.Warning{Kind: spec.WarningBlocked, URL: url, Message: "blocked by the browser: " + string(ev.BlockedReason)})
	default:
		w.add(spec.Warning{Kind: spec.WarningResource, URL: url, Message: ev.ErrorText})
	}
}

// browserFavicon: the full browser asks every site for /favicon.ico on its
// own; a site without one has lost nothing.
func browserFavicon(t network.ResourceType, raw string) bool {
	if t != network.ResourceTypeOther {
		return false
	}
	u, err := url.Parse(raw)
	return err == nil && u.Path == "/favicon.ico"
}

func (w *warnings) onException(ev *runtime.EventExceptionThrown) {
	d := ev.ExceptionDetails
	if d == nil {
		return
	}
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i] // the first line; the stack follows
		}
	}
	url := d.URL
	if url == "" && d.StackTrace != nil && len(d.StackTrace.CallFrames) > 0 {
		url = d.StackTrace.CallFrames[0].URL
	}
	w.add(spec.Warning{Kind: spec.WarningConsole, URL: url, Message: "uncaught " + msg})
}

func (w *warnings) onConsole(ev *runtime.EventConsoleAPICalled) {
	if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
		return
	}
	parts := make([]string, 0, len(ev.Args))
	for _, a := range ev.Args {
		parts = append(parts, remoteText(a))
	}
	url := ""
	if ev.StackTrace != nil && len(ev.StackTrace.CallFrames) > 0 {
		url = ev.StackTrace.CallFrames[0].URL
	}
	w.add(spec.Warning{Kind: spec.WarningConsole, URL: url, Message: "console.error: " + strings.Join(parts, " ")})
}

// remoteText is how the console would print a logged value.
func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if len(o.Value) > 0 {
		var s string
		if json.Unmarshal(o.Value, &s) == nil {
			return s
		}
		return string(o.Value)
	}
	if o.UnserializableValue != "" {
		return string(o.UnserializableValue)
	}
	return o.Description
}

// egressRefused reports whether a response is the egress proxy's refusal.
func egressRefused(h network.Headers) bool {
	for k, v := range h {
		if strings.EqualFold(k, egress.RefusedHeader) {
			s, _ := v.(string)
			return s == "refused"
		}
	}
	return false
}
