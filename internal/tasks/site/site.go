package site

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Doer sends HTTP requests: the worker's client, which dials only what
// ALLOWED_HOSTS allows.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Config bounds a discovery.
type Config struct {
	Client Doer
	// MaxPageBytes bounds every page and sitemap read; a larger one fails
	// the discovery naming it. Default DefaultMaxPageBytes.
	MaxPageBytes int64
	// Timeout is the deadline of the whole discovery, every page and
	// resource it reads included. Default DefaultTimeout.
	Timeout time.Duration
	// Concurrency is how many pages and resources are read at once.
	// Default 4.
	Concurrency int
}

// Defaults of a Config.
const (
	DefaultMaxPageBytes = 8 << 20
	DefaultTimeout      = 2 * time.Minute
)

// Spec is what to discover: source.site.
type Spec struct {
	URL     string
	Nav     string
	Include []string
	Exclude []string
	// MaxChapters keeps the first MaxChapters chapters; 0: all, up to
	// spec.MaxChapters.
	MaxChapters int
	// Revision, when set, is every chapter's revision, and no chapter
	// page is read.
	Revision string
}

// Chapter is a chapter found in the navigation.
type Chapter struct {
	URL      string
	Title    string
	Revision string
}

// Result is a discovery's outcome.
type Result struct {
	Chapters []Chapter
	// Generator is the navigation that was read: a generator's name,
	// "sitemap", "selector", or "navigation" for a page's navigation
	// landmark.
	Generator string
	// Requests and Bytes count what the discovery read.
	Requests int
	Bytes    int64
	Elapsed  time.Duration
}

// Outcomes a caller branches on. Each error of Discover that is the
// caller's to fix (no navigation, a page too large, too many chapters)
// also matches spec.ErrInvalid and names its field.
var (
	ErrNoChapters = errors.New("no chapters found")
	ErrTooLarge   = errors.New("page larger than the limit")
	ErrTooMany    = errors.New("more chapters than a manual may have")
)

// PageError is a page or sitemap that did not answer 200.
type PageError struct {
	URL    string
	Status int
}

func (e *PageError) Error() string {
	return fmt.Sprintf("%s answered %d %s", e.URL, e.Status, http.StatusText(e.Status))
}

// Final reports whether asking again cannot help (a 4xx other than 408
// and 429).
func (e *PageError) Final() bool {
	return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests
}

// fieldError is a FieldError (the caller's to fix) that also matches a
// sentinel of this package.
type fieldError struct {
	spec.FieldError
	sentinel error
}

func (e *fieldError) Is(target error) bool { return target == e.sentinel || target == spec.ErrInvalid }
func (e *fieldError) Unwrap() error        { return &e.FieldError }

func fieldErr(sentinel error, field, format string, args ...any) error {
	return &fieldError{spec.FieldError{Field: field, Rule: fmt.Sprintf(format, args...)}, sentinel}
}

// Discover reads the chapters of the site s names from its navigation.
func Discover(ctx context.Context, cfg Config, s Spec) (Result, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, fmt.Errorf("site discovery took longer than %s", cfg.Timeout))
	defer cancel()
	f := &fetcher{cfg: cfg}
	base, err := url.Parse(s.URL)
	if err != nil {
		return Result{}, &spec.FieldError{Field: "source.site.url", Rule: "not a valid URL: " + err.Error()}
	}
	links, generator, startPage, err := readNav(ctx, f, base, s.Nav)
	if err != nil {
		return Result{}, err
	}
	chapters, err := fold(base, links, s)
	if err != nil {
		return Result{}, err
	}
	if len(chapters) == 0 {
		return Result{}, noChapters(s, generator, len(links))
	}
	if s.Revision != "" {
		for i := range chapters {
			chapters[i].Revision = s.Revision
		}
	} else if err := f.revisions(ctx, chapters, startPage); err != nil {
		return Result{}, err
	}
	return Result{Chapters: chapters, Generator: generator, Requests: f.requests(), Bytes: f.bytes(), Elapsed: time.Since(start)}, nil
}

func (c Config) withDefaults() Config {
	if c.MaxPageBytes <= 0 {
		c.MaxPageBytes = DefaultMaxPageBytes
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	return c
}

// page is a fetched HTML page: its final URL and its body.
type page struct {
	url  *url.URL
	body []byte
}

// readNav fetches the start page (or sitemap) and lists its navigation's
// links; the start page comes back too, so that the chapter it may also
// be is not read twice.
func readNav(ctx context.Context, f *fetcher, base *url.URL, nav string) ([]link, string, *page, error) {
	if nav == NavSitemap {
		sm := base
		if !strings.HasSuffix(base.Path, ".xml") {
			sm = base.ResolveReference(&url.URL{Path: "sitemap.xml"})
		}
		body, _, err := f.get(ctx, sm.String())
		if err != nil {
			return nil, "", nil, err
		}
		links, err := sitemapLinks(strings.NewReader(string(body)))
		if err != nil {
			return nil, "", nil, &spec.FieldError{Field: "source.site.nav", Rule: fmt.Sprintf("%s: %v", sm, err)}
		}
		return links, NavSitemap, nil, nil
	}
	body, final, err := f.get(ctx, base.String())
	if err != nil {
		return nil, "", nil, err
	}
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		return nil, "", nil, fmt.Errorf("parsing %s: %w", base, err)
	}
	links, generator, err := navLinks(doc, nav)
	if err != nil {
		return nil, "", nil, &spec.FieldError{Field: "source.site.nav", Rule: err.Error()}
	}
	// Relative links resolve against the page's <base href>, if any.
	if b := baseHref(doc, final); b != nil {
		for i := range links {
			if u, err := b.Parse(links[i].href); err == nil {
				links[i].href = u.String()
			}
		}
	}
	return links, generator, &page{url: final, body: body}, nil
}

func noChapters(s Spec, generator string, links int) error {
	field, what := "source.site.nav", "no navigation of a generator it knows"
	switch {
	case s.Nav != "" && s.Nav != NavAuto:
		what = "no links in the navigation " + s.Nav
	case generator != "":
		what = "no links in its " + generator + " navigation"
	}
	if links > 0 {
		what = fmt.Sprintf("%d links, none a page of the site's origin", links)
		if len(s.Include) > 0 || len(s.Exclude) > 0 {
			field, what = "source.site.include", fmt.Sprintf("%d links, none of the site's origin that include and exclude let through", links)
		}
	}
	return fieldErr(ErrNoChapters, field, "%s has %s (name the generator, sitemap, or a CSS selector of the navigation's links)", redactURL(s.URL), what)
}

// fold turns the navigation's links into chapters: same origin as base
// only (no javascript:, mailto: or other sites), fragments dropped, each
// page once (its first entry, its first title), through include and
// exclude, at most s.MaxChapters.
func fold(base *url.URL, links []link, s Spec) ([]Chapter, error) {
	include, err := globs("source.site.include", s.Include)
	if err != nil {
		return nil, err
	}
	exclude, err := globs("source.site.exclude", s.Exclude)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Chapter
	for _, l := range links {
		u, err := base.Parse(strings.TrimSpace(l.href))
		if err != nil || !sameOrigin(base, u) {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		if u.Path == "" {
			u.Path = "/"
		}
		key := spec.CanonicalURL(u.String())
		if seen[key] {
			continue
		}
		if (len(include) > 0 && !matchAny(include, u.Path)) || matchAny(exclude, u.Path) {
			continue
		}
		seen[key] = true
		out = append(out, Chapter{URL: u.String(), Title: cleanTitle(l.title)})
		if len(out) > spec.MaxChapters {
			return nil, fieldErr(ErrTooMany, "source.site", "the navigation of %s lists more than %d pages; narrow it with include, exclude or max_chapters", redactURL(s.URL), spec.MaxChapters)
		}
	}
	if s.MaxChapters > 0 && len(out) > s.MaxChapters {
		out = out[:s.MaxChapters]
	}
	return out, nil
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b)) && b.User == nil
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = spec.DefaultPort(strings.ToLower(u.Scheme))
	}
	return strings.ToLower(u.Hostname()) + ":" + port
}

// cleanTitle makes a navigation entry's text a chapter title: printable,
// at most spec.MaxChapterTitleBytes.
func cleanTitle(t string) string {
	t = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, t)
	for len(t) > spec.MaxChapterTitleBytes {
		_, size := utf8.DecodeLastRuneInString(t)
		t = t[:len(t)-size]
	}
	return t
}

// globs compiles include or exclude patterns, matched against a page's
// path: * within a path segment, ** across segments, ? one character.
func globs(field string, patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		var b strings.Builder
		b.WriteString("^")
		for i := 0; i < len(p); i++ {
			switch {
			case strings.HasPrefix(p[i:], "**"):
				b.WriteString(".*")
				i++
			case p[i] == '*':
				b.WriteString("[^/]*")
			case p[i] == '?':
				b.WriteString("[^/]")
			default:
				b.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		}
		b.WriteString("$")
		re, err := regexp.Compile(b.String())
		if err != nil {
			return nil, &spec.FieldError{Field: field, Rule: fmt.Sprintf("pattern %q: %v", p, err)}
		}
		out = append(out, re)
	}
	return out, nil
}

func matchAny(res []*regexp.Regexp, path string) bool {
	for _, re := range res {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

func baseHref(doc *html.Node, final *url.URL) *url.URL {
	for _, n := range queryAll(doc, "base[href]") {
		href, _ := attr(n, "href")
		if u, err := final.Parse(href); err == nil {
			return u
		}
	}
	return final
}

// redactURL is a URL without its query values, as errors show URLs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the site"
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.User = nil
	return u.String()
}

// readLimited reads r up to limit bytes, failing for a larger body.
func readLimited(r io.Reader, limit int64, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fieldErr(ErrTooLarge, "source.site", "%s is larger than the page limit of %d bytes", redactURL(name), limit)
	}
	return b, nil
}
