package spec

import (
	"strconv"
	"unicode/utf8"
)

// A manual straight from a docs site: source.site names the site's start
// page, and the worker reads the chapters from the site's navigation
// (internal/tasks/site), each chapter's revision derived from its content unless
// Revision gives one. The discovered site then is a manual from chapters:
// Envelope.WithChapters.

// Site is source.site.
type Site struct {
	// URL is the start page (or, with Nav "sitemap", the sitemap), on
	// ALLOWED_HOSTS; the chapters are the pages of its origin that its
	// navigation links to.
	URL string `json:"url"`
	// Nav says where the navigation is: "" or "auto" (told from the
	// page), a generator ("sphinx", "mkdocs", "docusaurus", "antora"),
	// "sitemap", or a CSS selector of the navigation's links.
	Nav string `json:"nav,omitempty"`
	// Include and Exclude filter the chapters by their URL's path with
	// glob patterns (* within a segment, ** across, ? one character).
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// MaxChapters keeps the first MaxChapters chapters (0: all, up to
	// MaxChapters).
	MaxChapters int `json:"max_chapters,omitempty"`
	// Revision, when set, is every chapter's revision (the site build's
	// commit, say), instead of one derived from each chapter's content.
	Revision string `json:"revision,omitempty"`
}

// Bounds of source.site.
const (
	MaxSiteNavBytes = 1 << 10
	MaxSitePatterns = 100
	MaxSitePattern  = 512
)

// validateSite checks source.site; the caller checked that it is the only
// source given.
func validateSite(s *Site, allowed HostList) []error {
	var errs []error
	if s.URL == "" {
		errs = append(errs, fieldErr("source.site.url", "required"))
	} else if e := validateWebURL("source.site.url", "ALLOWED_HOSTS", s.URL, allowed); e != nil {
		errs = append(errs, e)
	}
	if len(s.Nav) > MaxSiteNavBytes {
		errs = append(errs, fieldErr("source.site.nav", "longer than %d bytes", MaxSiteNavBytes))
	} else if !printable(s.Nav) || !utf8.ValidString(s.Nav) {
		errs = append(errs, fieldErr("source.site.nav", "must be printable text without control characters"))
	}
	for _, list := range []struct {
		field    string
		patterns []string
	}{{"source.site.include", s.Include}, {"source.site.exclude", s.Exclude}} {
		if len(list.patterns) > MaxSitePatterns {
			errs = append(errs, fieldErr(list.field, "more than %d patterns", MaxSitePatterns))
			continue
		}
		for i, p := range list.patterns {
			field := list.field + "[" + strconv.Itoa(i) + "]"
			switch {
			case p == "":
				errs = append(errs, fieldErr(field, "must not be empty"))
			case len(p) > MaxSitePattern:
				errs = append(errs, fieldErr(field, "longer than %d bytes", MaxSitePattern))
			case !printable(p) || !utf8.ValidString(p):
				errs = append(errs, fieldErr(field, "must be printable text without control characters"))
			}
		}
	}
	if s.MaxChapters < 0 || s.MaxChapters > MaxChapters {
		errs = append(errs, fieldErr("source.site.max_chapters", "must be between 0 (all) and %d", MaxChapters))
	}
	if len(s.Revision) > MaxRevisionBytes {
		errs = append(errs, fieldErr("source.site.revision", "longer than %d bytes", MaxRevisionBytes))
	} else if !printable(s.Revision) || !utf8.ValidString(s.Revision) {
		errs = append(errs, fieldErr("source.site.revision", "must be printable text without control characters"))
	}
	return errs
}

// WithChapters is the manual a discovered site is: p with the chapters as
// its source. Its ArtifactKey depends on the chapters' keys, so a new
// release of the site with one page changed is a new manual whose other
// chapters are reused.
func (p Envelope) WithChapters(chapters []Chapter) Envelope {
	p.Source = EnvelopeSource{Chapters: chapters}
	return p
}
