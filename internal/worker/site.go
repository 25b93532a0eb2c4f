package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/tasks/export"
	"github.com/pdfexport/pdfexport/internal/tasks/site"
)

// siteReader reads source.site navigations for the export handlers:
// internal/tasks/site over a client that dials only what ALLOWED_HOSTS allows,
// with the egress guard's checks of renders (no special-purpose address
// the list does not name, none of the worker's own endpoints).
type siteReader struct {
	cfg site.Config
	tr  *http.Transport
}

// maxSiteRedirects bounds the redirects of one request of a discovery.
const maxSiteRedirects = 5

func (w *Worker) newSites(b *wiring) func() {
	cfg := b.cfg
	dialer := egress.Dialer{List: cfg.Allowed}
	tr := &http.Transport{
		Proxy:                 nil, // the dialer's checks are the egress policy
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       60 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	var rt http.RoundTripper = tr
	if b.sourceAuth != nil {
		rt = sourceCredentials{rt: tr, rules: b.sourceAuth}
	}
	client := &http.Client{Transport: userAgent{rt}, CheckRedirect: sameOriginRedirect}
	b.sites = &siteReader{tr: tr, cfg: site.Config{Client: client, MaxPageBytes: cfg.SiteMaxPageBytes,
		Timeout: cfg.SiteDiscoveryTimeout, Concurrency: max(cfg.RenderConcurrency, 4)}}
	return tr.CloseIdleConnections
}

// sameOriginRedirect follows a redirect only within the origin it started
// from: a site's pages are its origin's.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxSiteRedirects {
		return fmt.Errorf("more than %d redirects", maxSiteRedirects)
	}
	from := via[0].URL
	if !strings.EqualFold(req.URL.Scheme, from.Scheme) || !strings.EqualFold(req.URL.Host, from.Host) {
		return fmt.Errorf("%w: a redirect to another origin (%s://%s)", egress.ErrRefused, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// sourceCredentials gives a discovery's requests the credentials of
// SOURCE_AUTH_FILE, as the egress proxy gives a render's: each request
// (each redirect hop too) those of the rules matching its own origin,
// and no other host anything. A docs site behind a login is read with
// the credentials its chapters render with.
type sourceCredentials struct {
	rt    http.RoundTripper
	rules egress.Credentials
}

func (s sourceCredentials) RoundTrip(r *http.Request) (*http.Response, error) {
	port := r.URL.Port()
	if port == "" {
		port = spec.DefaultPort(r.URL.Scheme)
	}
	creds := s.rules.For(r.URL.Scheme, r.URL.Hostname(), port)
	if creds.Empty() {
		return s.rt.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	creds.Apply(r.Header, r.URL.Path)
	return s.rt.RoundTrip(r)
}

type userAgent struct{ rt http.RoundTripper }

func (u userAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", "pdfexport/"+buildinfo.String())
	return u.rt.RoundTrip(r)
}

// Discover implements export.SiteDiscoverer: a page that answers 4xx and
// a host the egress guard refuses fail for good, like the caller's own
// mistakes (internal/tasks/site's field errors).
func (s *siteReader) Discover(ctx context.Context, sp spec.Site) (export.Discovery, error) {
	res, err := site.Discover(ctx, s.cfg, site.Spec{URL: sp.URL, Nav: sp.Nav, Include: sp.Include, Exclude: sp.Exclude,
		MaxChapters: sp.MaxChapters, Revision: sp.Revision})
	if err != nil {
		var pe *site.PageError
		if (errors.As(err, &pe) && pe.Final()) || errors.Is(err, egress.ErrRefused) {
			err = fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		}
		return export.Discovery{}, err
	}
	chapters := make([]spec.Chapter, len(res.Chapters))
	for i, c := range res.Chapters {
		chapters[i] = spec.Chapter{URL: c.URL, Title: c.Title, Revision: c.Revision}
	}
	return export.Discovery{Chapters: chapters, Nav: res.Generator, Requests: res.Requests, Elapsed: res.Elapsed}, nil
}
