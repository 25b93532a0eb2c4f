package site

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"

	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// fetcher reads pages and resources for one discovery, counting what it
// read, each resource once however many chapters load it.
type fetcher struct {
	cfg      Config
	nreq     atomic.Int64
	nbytes   atomic.Int64
	mu       sync.Mutex
	resource map[string]*resourceID
}

func (f *fetcher) requests() int { return int(f.nreq.Load()) }
func (f *fetcher) bytes() int64  { return f.nbytes.Load() }

// get reads a page that must answer 200, at most MaxPageBytes of it.
func (f *fetcher) get(ctx context.Context, raw string) ([]byte, *url.URL, error) {
	resp, err := f.do(ctx, http.MethodGet, raw)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, &PageError{URL: redactURL(raw), Status: resp.StatusCode}
	}
	if resp.ContentLength > f.cfg.MaxPageBytes {
		return nil, nil, fieldErr(ErrTooLarge, "source.site", "%s is larger than the page limit of %d bytes (%d)", redactURL(raw), f.cfg.MaxPageBytes, resp.ContentLength)
	}
	body, err := readLimited(resp.Body, f.cfg.MaxPageBytes, raw)
	f.nbytes.Add(int64(len(body)))
	if err != nil {
		return nil, nil, err
	}
	return body, resp.Request.URL, nil
}

func (f *fetcher) do(ctx context.Context, method, raw string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, raw, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	f.nreq.Add(1)
	resp, err := f.cfg.Client.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s: %w", redactURL(raw), cause)
		}
		// The client's error names the URL already.
		return nil, err
	}
	return resp, nil
}

// resourceID is what a chapter's revision takes of a resource it loads.
type resourceID struct {
	once sync.Once
	id   string
	err  error
}

// revisions derives each chapter's revision from its content: the
// SHA-256 of its HTML and of the identity of every stylesheet, script and
// image it names (resourceIdentity). start is the start page, already
// read.
func (f *fetcher) revisions(ctx context.Context, chapters []Chapter, start *page) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(f.cfg.Concurrency, len(chapters)) {
		wg.Go(func() {
			for i := range next {
				rev, err := f.revision(ctx, chapters[i].URL, start)
				if err != nil {
					cancel(fmt.Errorf("chapter %d (%s): %w", i, redactURL(chapters[i].URL), err))
					continue
				}
				chapters[i].Revision = rev
			}
		})
	}
feed:
	for i := range chapters {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// revisionVersion starts every derived revision: a change of what it
// hashes changes it, so no chapter is taken for another.
const revisionVersion = "c1-"

func (f *fetcher) revision(ctx context.Context, raw string, start *page) (string, error) {
	var body []byte
	var final *url.URL
	if start != nil && spec.CanonicalURL(start.url.String()) == spec.CanonicalURL(raw) {
		body, final = start.body, start.url
	} else {
		var err error
		if body, final, err = f.get(ctx, raw); err != nil {
			return "", err
		}
	}
	h := sha256.New()
	sum := sha256.Sum256(body)
	fmt.Fprintf(h, "html %x\n", sum)
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		return "", fmt.Errorf("parsing %s: %w", redactURL(raw), err)
	}
	base := baseHref(doc, final)
	for _, ref := range loads(doc, base) {
		id, err := f.resourceIdentity(ctx, ref)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %s\n", ref, id)
	}
	return revisionVersion + hex.EncodeToString(h.Sum(nil))[:32], nil
}

var loadSel = cascadia.MustCompile(`link[rel~="stylesheet"][href], script[src], img[src]`)

// loads are the resources a page names that its print shows, in document
// order, each once: stylesheets, scripts and images. What they load in
// turn (a stylesheet's @import, fonts, a script's fetches) is not
// followed.
func loads(doc *html.Node, base *url.URL) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range cascadia.QueryAll(doc, loadSel) {
		v, ok := attr(n, "href")
		if !ok {
			v, _ = attr(n, "src")
		}
		v = strings.TrimSpace(v)
		if v == "" || strings.HasPrefix(strings.ToLower(v), "data:") {
			continue // a data: URL is in the HTML, hashed with it
		}
		u, err := base.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		if s := u.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// resourceIdentity names a resource's content without reading it where
// its server says: a strong ETag, else Last-Modified with the length
// (HEAD); a resource without either is read and hashed. One the egress
// guard refuses is "refused", as the render would find it; an answer
// other than 200 is its status. A failure to connect fails the discovery:
// a revision made of it would change with the network's mood.
func (f *fetcher) resourceIdentity(ctx context.Context, raw string) (string, error) {
	f.mu.Lock()
	if f.resource == nil {
		f.resource = map[string]*resourceID{}
	}
	r, ok := f.resource[raw]
	if !ok {
		r = &resourceID{}
		f.resource[raw] = r
	}
	f.mu.Unlock()
	r.once.Do(func() { r.id, r.err = f.identify(ctx, raw) })
	return r.id, r.err
}

func (f *fetcher) identify(ctx context.Context, raw string) (string, error) {
	resp, err := f.do(ctx, http.MethodHead, raw)
	if errors.Is(err, egress.ErrRefused) {
		return "refused", nil
	}
	if err != nil {
		return "", fmt.Errorf("a resource it loads: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotImplemented {
		return fmt.Sprintf("status %d", resp.StatusCode), nil
	}
	if resp.StatusCode == http.StatusOK {
		if etag := resp.Header.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
			return "etag " + etag, nil
		}
		if lm := resp.Header.Get("Last-Modified"); lm != "" && resp.ContentLength >= 0 {
			return fmt.Sprintf("modified %s length %d", lm, resp.ContentLength), nil
		}
	}
	resp, err = f.do(ctx, http.MethodGet, raw)
	if err != nil {
		return "", fmt.Errorf("a resource it loads: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("status %d", resp.StatusCode), nil
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(resp.Body, f.cfg.MaxPageBytes+1))
	f.nbytes.Add(n)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", redactURL(raw), err)
	}
	if n > f.cfg.MaxPageBytes {
		// Too large to hash here; its length and URL stand for it, and
		// the render is what bounds what it loads.
		return fmt.Sprintf("large %d", resp.ContentLength), nil
	}
	return "sha256 " + hex.EncodeToString(h.Sum(nil)), nil
}

func queryAll(n *html.Node, sel string) []*html.Node {
	return cascadia.QueryAll(n, cascadia.MustCompile(sel))
}
