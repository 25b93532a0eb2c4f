package spec

import (
	"errors"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"strings"
	"testing"
)

func siteRequest(mut func(*Site)) Request {
	s := &Site{URL: "https://docs.example.com/manual/"}
	if mut != nil {
		mut(s)
	}
	return Request{V: 1, ManualID: "m", Version: "1", Source: RequestSource{Site: s}}
}

func TestValidate_Site(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   Request
		field string // "" when valid
		rule  string
	}{
		{"a start page", siteRequest(nil), "", ""},
		{"every field", siteRequest(func(s *Site) {
			s.Nav, s.Include, s.Exclude, s.MaxChapters, s.Revision = "#toc a", []string{"/manual/**"}, []string{"/manual/old/*"}, 10, "4f2a91c"
		}), "", ""},
		{"no url", siteRequest(func(s *Site) { s.URL = "" }), "source.site.url", "required"},
		{"a host off the allowlist", siteRequest(func(s *Site) { s.URL = "https://other.example/" }), "source.site.url", "ALLOWED_HOSTS"},
		{"not http", siteRequest(func(s *Site) { s.URL = "file:///etc/passwd" }), "source.site.url", "scheme must be http or https"},
		{"an empty pattern", siteRequest(func(s *Site) { s.Include = []string{""} }), "source.site.include[0]", "must not be empty"},
		{"a control character", siteRequest(func(s *Site) { s.Exclude = []string{"/a", "/b\n"} }), "source.site.exclude[1]", "printable"},
		{"too many patterns", siteRequest(func(s *Site) { s.Include = make([]string, MaxSitePatterns+1) }), "source.site.include", "more than 100"},
		{"max_chapters over the limit", siteRequest(func(s *Site) { s.MaxChapters = MaxChapters + 1 }), "source.site.max_chapters", "between 0 (all) and 1000"},
		{"a nav too long", siteRequest(func(s *Site) { s.Nav = strings.Repeat("a", MaxSiteNavBytes+1) }), "source.site.nav", "longer than"},
		{"a revision too long", siteRequest(func(s *Site) { s.Revision = strings.Repeat("r", MaxRevisionBytes+1) }), "source.site.revision", "longer than"},
		{"a site and a url", func() Request { r := siteRequest(nil); r.Source.URL = "https://docs.example.com/"; return r }(), "source", "exactly one of"},
		// A site is a manual of chapters: it may be tagged and accessible.
		{"tagged", func() Request {
			r := siteRequest(nil)
			r.Options.Tagged = true
			r.Options.PDFUA = true
			r.Options.Lang = "en"
			return r
		}(), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(Hosts{Sources: siteAllowed})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if FirstField(err) != tc.field || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("err %v, want field %q saying %q", err, tc.field, tc.rule)
			}
		})
	}
}

// A site needs envelope version 3: a worker of version 2 would refuse it
// as an unknown field, so the enqueuer writes "v":3, which such a worker
// refuses for good naming the version.
func TestSite_NeedsEnvelopeVersion3(t *testing.T) {
	env := siteRequest(func(s *Site) { s.Nav = "sitemap" }).Envelope()
	if v, field := env.NeededVersion(); v != 3 || !strings.HasPrefix(field, "source.site") {
		t.Errorf("NeededVersion %d %q, want 3 and a source.site field", v, field)
	}
	env.V = 3
	b, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(Hosts{Sources: siteAllowed}); err != nil {
		t.Errorf("this worker refuses its own site envelope: %v", err)
	}
}

// A discovered site is keyed by its chapters: the same chapters the same
// manual, a chapter's new revision a new manual, and the site's own key
// (before discovery) neither.
func TestSite_WithChaptersKey(t *testing.T) {
	env := siteRequest(nil).Envelope()
	env.V = 3
	ch := []Chapter{{URL: "https://docs.example.com/manual/a.html", Title: "A", Revision: "c1-aa"}, {URL: "https://docs.example.com/manual/b.html", Title: "B", Revision: "c1-bb"}}
	a := env.WithChapters(ch)
	if a.Source.Site != nil || len(a.Source.Chapters) != 2 {
		t.Fatalf("WithChapters source %+v", a.Source)
	}
	if err := a.Validate(Hosts{Sources: siteAllowed}); err != nil {
		t.Fatalf("a discovered site is not a valid manual: %v", err)
	}
	same := env.WithChapters([]Chapter{ch[0], ch[1]})
	changed := env.WithChapters([]Chapter{ch[0], {URL: ch[1].URL, Title: "B", Revision: "c1-b2"}})
	if a.ArtifactKey() != same.ArtifactKey() || a.ArtifactKey() == changed.ArtifactKey() || a.ArtifactKey() == env.ArtifactKey() {
		t.Errorf("keys: site %s, discovered %s, again %s, one chapter changed %s", env.ArtifactKey(), a.ArtifactKey(), same.ArtifactKey(), changed.ArtifactKey())
	}
	if a.ChapterKey(0) != changed.ChapterKey(0) || a.ChapterKey(1) == changed.ChapterKey(1) {
		t.Errorf("chapter keys: the unchanged chapter's must stay, the changed one's must not")
	}
	other := env
	other.Version = "2"
	if other.WithChapters(ch).ChapterKey(0) != a.ChapterKey(0) {
		t.Errorf("a chapter with a revision is keyed by its content, not by the manual's version")
	}
}

var siteAllowed = allowlist.MustParse("docs.example.com")
