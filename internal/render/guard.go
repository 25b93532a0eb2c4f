package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The request guard, first layer: Fetch interception on the tab. Every
// request the tab's own process makes pauses until the guard continues it
// (data:, blob:, about:, and http(s)/ws(s) to an allowed host and port) or
// fails it with BlockedByClient (everything else, including file:). Requests
// made inside a cross-site iframe run in another renderer process and are not
// seen here; the proxy layer covers the network for those.

// precheckSource resolves the host of a source URL the way the egress proxy
// will and returns an ErrBlocked error when no address it resolves to is
// allowed. Resolution failures are left to the navigation to report.
func (r *Renderer) precheckSource(ctx context.Context, raw string) error {
	p := r.proxy.Load()
	u, err := url.Parse(raw)
	if p == nil || err != nil {
		return nil
	}
	port := u.Port()
	switch strings.ToLower(u.Scheme) {
	case "http", "ws", "https", "wss":
		if port == "" {
			port = spec.DefaultPort(u.Scheme)
		}
	default:
		return nil
	}
	_, err = p.Resolve(ctx, u.Hostname(), port)
	var rf *egress.Refusal
	if errors.As(err, &rf) {
		return fmt.Errorf("%w: %s", ErrBlocked, rf.Reason)
	}
	return nil
}

// checkURL decides whether the page may request raw. It returns nil or an
// error wrapping ErrBlocked that says why.
func checkURL(allowed allowlist.List, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: unparsable URL %q", ErrBlocked, shortURL(raw))
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "data", "blob", "about":
		return nil
	case "http", "https", "ws", "wss":
	default:
		return fmt.Errorf("%w: scheme %q is not allowed (%s)", ErrBlocked, scheme, shortURL(raw))
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return fmt.Errorf("%w: URL without host %q", ErrBlocked, shortURL(raw))
	}
	if port == "" {
		port = spec.DefaultPort(scheme)
	}
	if err := allowed.Check(host, port); err != nil {
		return fmt.Errorf("%w: %v", ErrBlocked, err)
	}
	return nil
}

// guard intercepts the requests of one tab.
type guard struct {
	allowed   allowlist.List
	log       *slog.Logger
	mainFrame cdp.FrameID
	notify    func()                   // called when the main document is blocked
	blocked   func(url, reason string) // called for every blocked request
	headers   []scopedHeader           // added to the requests their scope matches

	blockedCount atomic.Int64

	mu          sync.Mutex
	blockedMain error // first blocked navigation of the main frame

	done chan struct{}
}

func newGuard(allowed allowlist.List, log *slog.Logger, mainFrame cdp.FrameID, notify func(), blocked func(url, reason string)) *guard {
	return &guard{allowed: allowed, log: log, mainFrame: mainFrame, notify: notify, blocked: blocked, done: make(chan struct{})}
}

// start subscribes to Fetch.requestPaused, enables interception of every
// request and answers paused requests on its own goroutine until ctx ends.
// Call wait after ctx ends to join that goroutine.
func (g *guard) start(ctx context.Context, t *chromedp.Target) error {
	events := cdp.Events(ctx, t, fetch.RequestPaused) // subscribes now, before Enable
	go func() {
		// Each paused request is answered on its own goroutine: a page
		// that asks for its style sheets, scripts and images at once does
		// not wait for one round trip after another.
		var answering sync.WaitGroup
		defer close(g.done)
		defer answering.Wait()
		for ev, err := range events {
			if err != nil {
				if ctx.Err() == nil {
					// Requests stay paused (fail closed); the render times out.
					g.log.Warn("guard: reading paused requests failed", "err", err)
				}
				return
			}
			answering.Go(func() { g.handle(ctx, t, &ev) })
		}
	}()
	_, err := cdp.Call(ctx, t, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest}},
	})
	return err
}

// wait joins the goroutine of start; its ctx must be done.
func (g *guard) wait() { <-g.done }

func (g *guard) handle(ctx context.Context, t *chromedp.Target, ev *fetch.EventRequestPaused) {
	raw := ""
	if ev.Request != nil {
		raw = ev.Request.URL
	}
	err := checkURL(g.allowed, raw)
	if err == nil {
		if _, cerr := cdp.Call(ctx, t, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID, Headers: extraHeaders(g.headers, ev.Request)}); cerr != nil && ctx.Err() == nil {
			g.log.Debug("guard: continue failed", "url", shortURL(raw), "err", cerr)
		}
		return
	}
	g.blockedCount.Add(1)
	main := ev.ResourceType == network.ResourceTypeDocument && ev.FrameID == g.mainFrame
	if !main && g.blocked != nil {
		g.blocked(raw, strings.TrimPrefix(err.Error(), ErrBlocked.Error()+": "))
	}
	level := slog.LevelDebug // pages often reference trackers; one line per render is enough
	if main {
		level = slog.LevelInfo
	}
	g.log.Log(ctx, level, "guard: request blocked", "url", shortURL(raw), "type", ev.ResourceType, "main_document", main, "reason", err)
	if _, cerr := cdp.Call(ctx, t, fetch.FailRequest, fetch.FailRequestParams{
		RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient,
	}); cerr != nil && ctx.Err() == nil {
		g.log.Debug("guard: fail failed", "url", shortURL(raw), "err", cerr)
	}
	// Report after FailRequest went out, so that a render ending on this
	// report never leaves the request paused.
	if main {
		g.mu.Lock()
		if g.blockedMain == nil {
			g.blockedMain = fmt.Errorf("main document: %w", err)
		}
		g.mu.Unlock()
		g.notify()
	}
}

// mainBlocked returns the error of the first blocked main-frame navigation.
func (g *guard) mainBlocked() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.blockedMain
}

// awaitMainBlocked returns the guard's reason for blocking the main document
// u, waiting up to a second for it to be recorded; without one it still
// reports ErrBlocked, since only the guard fails a request as BlockedByClient.
func (g *guard) awaitMainBlocked(ctx context.Context, u string) error {
	deadline := time.Now().Add(time.Second)
	for {
		if err := g.mainBlocked(); err != nil {
			return err
		}
		if time.Now().After(deadline) || sleep(ctx, 5*time.Millisecond) != nil {
			return fmt.Errorf("%w: main document %s", ErrBlocked, shortURL(u))
		}
	}
}

// shortURL is a URL as messages and logs show it: redacted (no password, no
// query values: signed links and access tokens stay out of errors, task
// results and logs) and at most 200 bytes.
func shortURL(u string) string { return truncate(redact.URL(u), 200) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
