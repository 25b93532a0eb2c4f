package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// warningSite serves pages whose sub-resources fail in every way a real
// page's do.
func warningSite(t *testing.T) (site *httptest.Server, deadPort int) {
	t.Helper()
	deadPort = testsupport.FreePort(t) // nothing listens there
	site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.png":
			w.Header().Set("Content-Type", "image/svg+xml")
			_, _ = io.WriteString(w, `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`)
		case "/broken":
			_, _ = fmt.Fprintf(w, `<!doctype html><title>broken</title><h1>A page that lost things</h1>
<img src="/missing.png?token=SECRET-42">
<img src="/ok.png">
<img src="http://forbidden.example.test/diagram.png">
<link rel="stylesheet" href="http://127.0.0.1:%d/print.css">
<script>console.error("chart data unavailable:", 42); console.log("fine"); setTimeout(function(){ throw new Error("boom at load") }, 0);</script>`, deadPort)
		case "/many":
			_, _ = io.WriteString(w, `<!doctype html><title>many</title>`)
			for i := range 30 {
				_, _ = fmt.Fprintf(w, `<img src="/gone-%d.png">`, i)
			}
		case "/clean":
			_, _ = io.WriteString(w, `<!doctype html><title>clean</title><h1>Nothing wrong</h1><img src="/ok.png">`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	return site, deadPort
}

type warningCounter struct {
	mu    sync.Mutex
	kinds map[string]int
}

func (c *warningCounter) RenderDone(string, time.Duration) {}
func (c *warningCounter) BrowserRestarted()                {}
func (c *warningCounter) RenderWarning(kind string) {
	c.mu.Lock()
	c.kinds[kind]++
	c.mu.Unlock()
}

// TestRender_ReportsWhatThePageLost: a page with a missing image, a blocked
// host, an unreachable style sheet, a console.error and an uncaught
// exception prints, and its Stats list each (URLs redacted); metrics count
// them by kind; the image that loaded and console.log are not warnings.
func TestRender_ReportsWhatThePageLost(t *testing.T) {
	t.Parallel()
	site, deadPort := warningSite(t)
	host := strings.TrimPrefix(site.URL, "http://")
	obs := &warningCounter{kinds: map[string]int{}}
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(host + ",127.0.0.1:" + strconv.Itoa(deadPort)), Observer: obs})
	st, err := r.Render(context.Background(), Source{URL: site.URL + "/broken"}, spec.Options{}.Settings(), discardSink)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	find := func(kind, urlPart, msgPart string, status int) bool {
		for _, w := range st.Warnings {
			if w.Kind == kind && strings.Contains(w.URL, urlPart) && strings.Contains(w.Message, msgPart) && w.Status == status {
				return true
			}
		}
		return false
	}
	for _, want := range []struct {
		kind, url, msg string
		status         int
	}{
		{spec.WarningResource, "/missing.png", "Not Found", 404},
		{spec.WarningBlocked, "forbidden.example.test/diagram.png", "not on ALLOWED_HOSTS", 0},
		{spec.WarningResource, "/print.css", "net::", 0}, // the proxy's 502, which Chromium's ORB turns into a network error
		{spec.WarningConsole, "", "console.error: chart data unavailable: 42", 0},
		{spec.WarningConsole, "", "uncaught Error: boom at load", 0},
	} {
		if !find(want.kind, want.url, want.msg, want.status) {
			t.Errorf("no %s warning for %q %q (status %d) in %+v", want.kind, want.url, want.msg, want.status, st.Warnings)
		}
	}
	for _, w := range st.Warnings {
		if strings.Contains(w.URL, "SECRET-42") || strings.Contains(w.URL, "ok.png") || strings.Contains(w.Message, "fine") {
			t.Errorf("warning %+v: a secret, or something that did not fail", w)
		}
	}
	if len(st.Warnings) != 5 || st.WarningsOmitted != 0 {
		t.Errorf("%d warnings (+%d omitted), want 5: %+v", len(st.Warnings), st.WarningsOmitted, st.Warnings)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.kinds["resource"] != 2 || obs.kinds["blocked"] != 1 || obs.kinds["console"] != 2 {
		t.Errorf("warnings counted %v", obs.kinds)
	}
}

// TestRender_FailOnWarnings: with FailOn the render fails (ErrPageErrors,
// not retryable) naming the first offenders, and the sink is never called;
// a clean page passes; past spec.MaxWarnings the rest are counted.
func TestRender_FailOnWarnings(t *testing.T) {
	t.Parallel()
	site, deadPort := warningSite(t)
	host := strings.TrimPrefix(site.URL, "http://")
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(host + ",127.0.0.1:" + strconv.Itoa(deadPort))})
	tests := []struct {
		name, path string
		failOn     spec.FailOn
		want       string // "" renders
	}{
		{"resource errors", "/broken", spec.FailOn{ResourceErrors: true}, "(fail_on_resource_errors): |blocked http://forbidden.example.test/diagram.png|/missing.png?token=REDACTED answered 404"},
		{"console errors", "/broken", spec.FailOn{ConsoleErrors: true}, "fail_on_console_errors): console"},
		{"clean page", "/clean", spec.FailOn{ResourceErrors: true, ConsoleErrors: true}, ""},
		{"many, counted", "/many", spec.FailOn{ResourceErrors: true}, "and 27 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			settings := spec.Options{}.Settings()
			settings.FailOn = tt.failOn
			sunk := false
			st, err := r.Render(context.Background(), Source{URL: site.URL + tt.path}, settings, func(ctx context.Context, pdf io.Reader) error {
				sunk = true
				return discardSink(ctx, pdf)
			})
			if tt.want == "" {
				if err != nil || len(st.Warnings) != 0 || !sunk {
					t.Fatalf("Render = %v, warnings %+v, sunk %v", err, st.Warnings, sunk)
				}
				return
			}
			if !errors.Is(err, ErrPageErrors) || Retryable(err) {
				t.Fatalf("err = %v, want a final ErrPageErrors", err)
			}
			for want := range strings.SplitSeq(tt.want, "|") { // offenders in the order the events came
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to say %q", err, want)
				}
			}
			if sunk {
				t.Error("the sink was called: something would be stored")
			}
		})
	}
	st, err := r.Render(context.Background(), Source{URL: site.URL + "/many"}, spec.Options{}.Settings(), discardSink)
	if err != nil || len(st.Warnings) != spec.MaxWarnings || st.WarningsOmitted != 30-spec.MaxWarnings {
		t.Fatalf("30 broken images: %v, %d listed, %d omitted", err, len(st.Warnings), st.WarningsOmitted)
	}
}

func discardSink(_ context.Context, pdf io.Reader) error {
	_, err := io.Copy(io.Discard, pdf)
	return err
}
