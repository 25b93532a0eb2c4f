package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// stagePage opens a tab of r as a render does (openTab, attach, the
// request guard on) and returns its page, for a test to run one stage on
// alone. Everything is given back at the end of the test: the page closed
// while the guard still answers, the guard stopped, the run ended, the
// tab released and the browser's reference dropped.
func stagePage(t *testing.T, r *Renderer) (context.Context, *tabPage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	b, release, err := r.acquire(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	tb, err := r.openTab(b, tabOptions{})
	if err != nil {
		t.Fatalf("openTab: %v", err)
	}
	t.Cleanup(func() { tb.release(false) })
	run := r.startRun(ctx, tb.ctx)
	t.Cleanup(run.stop)
	if err := tb.attach(run.ctx); err != nil {
		t.Fatalf("attach: %v", err)
	}
	pg := newTabPage(r, tb, run.progress)
	start, stop := guardPage(run.ctx, pg, loadOptions{})
	t.Cleanup(stop)
	t.Cleanup(func() { tb.closePage(false) })
	if err := start(); err != nil {
		t.Fatalf("the guard: %v", err)
	}
	return run.ctx, pg
}

// evalString evaluates expr in the page and returns its string value.
func evalString(t *testing.T, ctx context.Context, pg *tabPage, expr string) string {
	t.Helper()
	res, err := cdp.Call(ctx, pg.t, runtime.Evaluate, runtime.EvaluateParams{Expression: "String(" + expr + ")", ReturnByValue: new(true)})
	if err != nil || res.ExceptionDetails != nil || res.Result == nil {
		t.Fatalf("evaluating %s: %v %v", expr, err, res.ExceptionDetails)
	}
	var s string
	if err := json.Unmarshal(res.Result.Value, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// stageSite serves the pages of the stage tests: /page, /missing (404),
// /slow.png (late), /timer (text a timer adds after the load event),
// /ready (sets window.ready after a while).
func stageSite(t *testing.T) *site {
	return newSite(t, func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<!doctype html><title>T</title><p>LOADED-PAGE</p>`))
		case "/slow.png":
			time.Sleep(150 * time.Millisecond)
			w.Header().Set("Content-Type", "image/png")
			w.Write(pngPixel)
		case "/timer":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<!doctype html><p>EARLY</p><script>
				addEventListener("load", () => setTimeout(() => {
					const i = new Image(); i.src = "/slow.png"; i.id = "late"; document.body.append(i, "TIMER-RAN");
				}, 100));</script>`))
		case "/ready":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<!doctype html><p>WAITING</p><script>setTimeout(() => { window.ready = true; }, 200)</script>`))
		default:
			http.NotFound(w, req)
		}
	})
}

// TestStage_Load: loadPage emulates the media asked and loads a URL to its
// load event, or HTML into the blank page; only a navigated document runs
// the idle probe; a failed or blocked main document fails the stage with
// its sentinel.
func TestStage_Load(t *testing.T) {
	t.Parallel()
	s := stageSite(t)
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())})
	for _, tc := range []struct {
		name    string
		o       loadOptions
		text    string // the loaded document's body has it
		media   string // matches
		probe   bool
		wantErr func(error) bool
	}{
		{name: "a URL", o: loadOptions{url: s.URL + "/page", media: "print"}, text: "LOADED-PAGE", media: "print", probe: true},
		{name: "HTML", o: loadOptions{html: `<p>INLINE-HTML</p>`, media: "screen"}, text: "INLINE-HTML", media: "screen"},
		{name: "a 404", o: loadOptions{url: s.URL + "/missing", media: "print"}, wantErr: func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.Code == http.StatusNotFound
		}},
		{name: "a host off the allowlist", o: loadOptions{url: "http://127.0.0.2:9/", media: "print"}, wantErr: func(err error) bool {
			return errors.Is(err, ErrBlocked)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, pg := stagePage(t, r)
			err := loadPage(ctx, pg, tc.o)
			if tc.wantErr != nil {
				if err == nil || !tc.wantErr(err) {
					t.Fatalf("loadPage: %v; want the sentinel of its failure", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("loadPage: %v", err)
			}
			if got := evalString(t, ctx, pg, "document.readyState"); got != "complete" {
				t.Errorf("readyState %q after the load", got)
			}
			if got := evalString(t, ctx, pg, "document.body.textContent"); !strings.Contains(got, tc.text) {
				t.Errorf("the document has %q, want %q in it", got, tc.text)
			}
			if got := evalString(t, ctx, pg, "matchMedia("+`"`+tc.media+`"`+").matches"); got != "true" {
				t.Errorf("media %q not emulated", tc.media)
			}
			if pg.probe != tc.probe {
				t.Errorf("probe %v, want %v", pg.probe, tc.probe)
			}
		})
	}
}

// TestStage_WaitReady: waitReady returns once the page is ready, as the
// page's kind says: a static page at once (still), a scripted page after
// the quiet period on its virtual clock, in which its timer ran and the
// image it added loaded (still and scripted), a page with wait_for once
// its expression is true; a wait_for that never is ends with the run, the
// stage naming the expression's last exception.
func TestStage_WaitReady(t *testing.T) {
	t.Parallel()
	s := stageSite(t)
	r := newRenderer(t, Config{AllowedHosts: allowlist.MustParse(s.hostPort())})
	for _, tc := range []struct {
		name    string
		load    loadOptions
		ready   readyOptions
		want    readiness
		check   string // true in the page once it is ready
		timeout time.Duration
		stage   string // in the stage of the error, if any
	}{
		{name: "static HTML", load: loadOptions{html: `<p>STATIC</p>`, media: "print"}, want: readiness{still: true}, check: `document.body.textContent.includes("STATIC")`},
		{name: "a timer after load", load: loadOptions{url: s.URL + "/timer", media: "print"}, want: readiness{still: true, scripted: true},
			check: `document.body.textContent.includes("TIMER-RAN") && document.getElementById("late").complete`},
		{name: "wait_for", load: loadOptions{url: s.URL + "/ready", media: "print"}, ready: readyOptions{waitFor: "window.ready === true"}, check: `window.ready === true`},
		{name: "wait_for that throws", load: loadOptions{html: `<p>x</p>`, media: "print"}, ready: readyOptions{waitFor: "window.missing.x"},
			timeout: 2 * time.Second, stage: `wait_for "window.missing.x" to become truthy (last exception: TypeError`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, pg := stagePage(t, r)
			if err := loadPage(ctx, pg, tc.load); err != nil {
				t.Fatalf("loadPage: %v", err)
			}
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			rd, err := waitReady(ctx, pg, tc.ready)
			if tc.stage != "" {
				if err == nil || !strings.Contains(pg.progress.stage, tc.stage) {
					t.Fatalf("waitReady: %v at %q; want an error at %q", err, pg.progress.stage, tc.stage)
				}
				return
			}
			if err != nil {
				t.Fatalf("waitReady: %v", err)
			}
			if rd != tc.want {
				t.Errorf("readiness %+v, want %+v", rd, tc.want)
			}
			if got := evalString(t, ctx, pg, tc.check); got != "true" {
				t.Errorf("%s is not true once the page is ready", tc.check)
			}
			if n := pg.w.inflightCount(); n != 0 {
				t.Errorf("%d requests in flight once the page is ready", n)
			}
		})
	}
}

// TestStage_PrintAndStream: printPage prints the loaded page and streamPDF
// hands its PDF to the sink whole, counting pages and bytes; a page range
// past the document fails the print for good, and a PDF over a limit, a
// sink that fails or one that stops reading fail the stream with their
// sentinels.
func TestStage_PrintAndStream(t *testing.T) {
	t.Parallel()
	r := newRenderer(t, Config{})
	doc := multiPageHTML(3)
	for _, tc := range []struct {
		name     string
		settings spec.PrintSettings
		limits   limits
		sink     func(pdf io.Reader, buf *bytes.Buffer) error
		printErr func(error) bool
		err      error // of the stream
		pages    int
	}{
		{name: "the whole PDF", settings: settings(spec.Options{}), pages: 3},
		{name: "a page range", settings: settings(spec.Options{PageRanges: "2-3"}), pages: 2},
		{name: "a page range past the end", settings: settings(spec.Options{PageRanges: "9"}), printErr: func(err error) bool {
			return errors.Is(err, ErrPrint) && !Retryable(err)
		}},
		{name: "over the page limit", settings: settings(spec.Options{}), limits: limits{pages: 2}, err: ErrLimit},
		{name: "a sink that fails", settings: settings(spec.Options{}), err: ErrSink,
			sink: func(io.Reader, *bytes.Buffer) error { return errors.New("disk full") }},
		{name: "a sink that stops reading", settings: settings(spec.Options{}), err: ErrSink,
			sink: func(pdf io.Reader, buf *bytes.Buffer) error { _, err := io.CopyN(buf, pdf, 100); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, pg := stagePage(t, r)
			if err := loadPage(ctx, pg, loadOptions{html: doc, media: "print"}); err != nil {
				t.Fatalf("loadPage: %v", err)
			}
			h, err := printPage(ctx, pg, printOptions{settings: tc.settings}, readiness{})
			if tc.printErr != nil {
				if err == nil || !tc.printErr(err) {
					t.Fatalf("printPage: %v; want a permanent ErrPrint", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("printPage: %v", err)
			}
			var buf bytes.Buffer
			sink := tc.sink
			if sink == nil {
				sink = func(pdf io.Reader, buf *bytes.Buffer) error { _, err := io.Copy(buf, pdf); return err }
			}
			var st Stats
			err = streamPDF(ctx, pg, h, streamOptions{
				sink:   func(_ context.Context, pdf io.Reader) error { return sink(pdf, &buf) },
				limits: tc.limits,
				stats:  &st,
			})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("streamPDF: %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("streamPDF: %v", err)
			}
			if !bytes.HasPrefix(buf.Bytes(), []byte("%PDF-")) || st.Bytes != int64(buf.Len()) {
				t.Errorf("the sink got %d bytes (Stats.Bytes %d), want the whole PDF", buf.Len(), st.Bytes)
			}
			if st.Pages != tc.pages || pdfInfo(t, buf.Bytes())["Pages"] != fmt.Sprint(tc.pages) {
				t.Errorf("Stats.Pages %d (pdfinfo %s), want %d", st.Pages, pdfInfo(t, buf.Bytes())["Pages"], tc.pages)
			}
			if pg.progress.stage != "streaming the PDF to the sink" {
				t.Errorf("stage %q after the stream", pg.progress.stage)
			}
		})
	}
}
