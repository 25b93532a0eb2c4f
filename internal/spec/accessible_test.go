package spec_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/pdfexport/pdfexport/internal/spec"
)

func manualPayload(o Options) Envelope {
	return Envelope{V: EnvelopeVersion, ManualID: "m", Version: "1",
		Source: EnvelopeSource{Chapters: []Chapter{{HTML: "<h1>a</h1>"}, {HTML: "<h1>b</h1>"}}}, Options: o}
}

// TestAccessibleOptions: what a tagged, PDF/UA or PDF/A manual accepts and
// refuses, naming the fields.
func TestAccessibleOptions(t *testing.T) {
	enc := &Encryption{OwnerPassword: "owner-secret-1"}
	for _, tc := range []struct {
		name     string
		opts     Options
		chapters bool
		fields   []string // refused, naming these first; nil: accepted
		rule     string
	}{
		{"tagged manual", Options{Tagged: true}, true, nil, ""},
		{"pdf_ua with lang", Options{PDFUA: true, Lang: "de-CH"}, true, nil, ""},
		{"pdf_a", Options{PDFA: "2b", Outline: true}, true, nil, ""},
		{"pdf_a level", Options{PDFA: "1a"}, true, []string{"options.pdf_a"}, "must be one of 2b"},
		{"pdf_a and encryption", Options{PDFA: "2b", Encryption: enc}, true, []string{"options.pdf_a"}, "options.pdf_a and options.encryption"},
		{"lang untagged", Options{Lang: "en"}, true, []string{"options.lang"}, "options.tagged or options.pdf_ua"},
		{"lang shape", Options{Tagged: true, Lang: "english language"}, true, []string{"options.lang"}, "BCP 47"},
		{"pdf_ua and a watermark", Options{PDFUA: true, Watermark: &Watermark{Text: "DRAFT"}}, true, []string{"options.watermark"}, "pdf_ua"},
		{"pdf_ua of a page", Options{PDFUA: true}, false, []string{"options.pdf_ua"}, "source.chapters"},
		{"pdf_a of a page", Options{PDFA: "2b"}, false, []string{"options.pdf_a"}, "source.chapters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := manualPayload(tc.opts)
			if !tc.chapters {
				p.Source = EnvelopeSource{HTML: "<p>x</p>"}
			}
			err := p.Validate(Hosts{Sources: testAllowed})
			if tc.fields == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || FirstField(err) != tc.fields[0] || !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("Validate = %v; want refused naming %s and saying %q", err, tc.fields[0], tc.rule)
			}
		})
	}
}

// TestAccessibleOptions_NeedVersion3: every new option, and tagged with
// chapters (refused by version 2 workers), needs envelope version 3; a
// tagged single page does not.
func TestAccessibleOptions_NeedVersion3(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   Envelope
		need  int
		field string
	}{
		{"tagged manual", manualPayload(Options{Tagged: true}), 3, "options.tagged"},
		{"pdf_ua", manualPayload(Options{PDFUA: true}), 3, "options.pdf_ua"},
		{"pdf_a", manualPayload(Options{PDFA: "2b"}), 3, "options.pdf_a"},
		{"lang", manualPayload(Options{Tagged: true, Lang: "en"}), 3, "options.lang"},
		{"outline manual", manualPayload(Options{Outline: true}), 1, ""},
		{"tagged page", Envelope{V: 1, ManualID: "m", Version: "1", Source: EnvelopeSource{HTML: "x"}, Options: Options{Tagged: true}}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if need, field := tc.env.NeededVersion(); need != tc.need || (tc.field != "" && field != tc.field) {
				t.Errorf("NeededVersion = %d, %q; want %d, %q", need, field, tc.need, tc.field)
			}
		})
	}
}

// TestAccessibleOptions_Keys: a tagged manual is not the outline-only
// manual's artifact; the chapters of tagged and PDF/UA manuals are the
// same (tagged, with Chromium's outline), those of the outline-only
// manual are keyed apart (untagged, with heading marks:
// ChapterHeadingMarks); and a tagged single page keeps the key it always
// had.
func TestAccessibleOptions_Keys(t *testing.T) {
	outline := manualPayload(Options{Outline: true})
	tagged := manualPayload(Options{Outline: true, Tagged: true})
	ua := manualPayload(Options{Outline: true, PDFUA: true})
	if outline.ArtifactKey() == tagged.ArtifactKey() || tagged.ArtifactKey() == ua.ArtifactKey() {
		t.Error("a tagged or PDF/UA manual shares the outline-only manual's key")
	}
	for i := range outline.Source.Chapters {
		if tagged.ChapterKey(i) != ua.ChapterKey(i) {
			t.Errorf("chapter %d: keys differ between tagged and pdf_ua manuals", i)
		}
		if outline.ChapterKey(i) == tagged.ChapterKey(i) {
			t.Errorf("chapter %d: the outline-only manual's chapter (heading marks, untagged) shares the tagged one's key", i)
		}
	}
	// Only an untagged manual with an outline has its chapters keyed
	// anew: the keys of others, as the build before heading marks
	// computed them.
	for _, tc := range []struct {
		opts              Options
		chapter, artifact string
	}{
		{Options{}, "_chapters/dd30ef541f7932e663a20dc712df3fc6.pdf", "m/1/3b9e1d84a6ecb31c.pdf"},
		{Options{TOC: true}, "_chapters/dd30ef541f7932e663a20dc712df3fc6.pdf", "m/1/3a2f1bb1a13e8a4a.pdf"},
		{Options{Outline: true, Tagged: true}, "_chapters/b1fa02fa8d56cc4b87f8d50062192c10.pdf", "m/1/91c1140beba5cf25.pdf"},
	} {
		p := manualPayload(tc.opts)
		if p.ChapterKey(0) != tc.chapter || p.ArtifactKey() != tc.artifact {
			t.Errorf("options %+v: keys %s and %s, were %s and %s", tc.opts, p.ChapterKey(0), p.ArtifactKey(), tc.chapter, tc.artifact)
		}
	}
	// The key of a tagged page, as the build before accessible manuals
	// computed it.
	page := Envelope{V: 1, ManualID: "m", Version: "1", Source: EnvelopeSource{HTML: "x"}, Options: Options{Tagged: true}}
	if got, want := page.ArtifactKey(), "m/1/"+taggedPageHash+".pdf"; got != want {
		t.Errorf("a tagged page's key %s, want %s as before", got, want)
	}
	if ct := ua.ChapterTask("t", 0); ct.Options.PDFUA || !ct.Options.Tagged {
		t.Errorf("a PDF/UA manual's chapter task: %+v; want a tagged chapter without pdf_ua", ct.Options)
	}
}

// taggedPageHash is the key's hash of a tagged page of "x" at the commit
// before accessible manuals.
const taggedPageHash = "7bd9b2eb6e679bfb"
