package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// A manual from chapters: source.chapters lists 1 to MaxChapters pages,
// each printed on its own (by whichever worker of the fleet takes it) and
// stored under a key of its own, ChapterKey, that depends on what the
// chapter is and how it is printed, never on the manual or version that
// asked for it: a chapter whose revision did not change is printed once
// for every version and every manual that includes it. The manual's own
// key (ArtifactKey) hashes the chapters' keys and titles, so the manual is
// assembled once per version, like any export.

// MaxChapters bounds source.chapters.
const MaxChapters = 1000

// MaxChapterTitleBytes and MaxRevisionBytes bound a chapter's title and
// revision.
const (
	MaxChapterTitleBytes = 512
	MaxRevisionBytes     = 128
)

// ChapterKeyPrefix starts every chapter's storage key. A manual_id starts
// with a letter or digit, so no export's key starts with it.
const ChapterKeyPrefix = "_chapters/"

// Chapter is one chapter of a manual: exactly one of URL and HTML.
type Chapter struct {
	URL  string `json:"url,omitempty"`
	HTML string `json:"html,omitempty"`
	// Title is the chapter's entry in the outline and the table of
	// contents; "" takes the title of the printed page.
	Title string `json:"title,omitempty"`
	// Revision names the chapter's content. A URL chapter without one is
	// taken to change with every version of the manual; with one, it is
	// printed again only when the revision changes. An HTML chapter is
	// named by its content, and a revision adds to that.
	Revision string `json:"revision,omitempty"`
}

// validateChapters checks source.chapters; the caller checked that it is
// the only source given.
func validateChapters(chapters []Chapter, allowed HostList) []error {
	var errs []error
	if len(chapters) > MaxChapters {
		return []error{fieldErr("source.chapters", "more than %d chapters (%d)", MaxChapters, len(chapters))}
	}
	for i, c := range chapters {
		field := "source.chapters[" + strconv.Itoa(i) + "]"
		switch {
		case c.URL != "" && c.HTML != "":
			errs = append(errs, fieldErr(field, "exactly one of url and html, not both"))
		case c.URL == "" && c.HTML == "":
			errs = append(errs, fieldErr(field, "one of url or html is required"))
		case c.URL != "":
			if e := validateWebURL(field+".url", "ALLOWED_HOSTS", c.URL, allowed); e != nil {
				errs = append(errs, e)
			}
		case len(c.HTML) > MaxHTMLBytes:
			errs = append(errs, fieldErr(field+".html", "larger than %d bytes (2 MiB)", MaxHTMLBytes))
		case !utf8.ValidString(c.HTML):
			errs = append(errs, fieldErr(field+".html", "must be valid UTF-8 (convert the document, e.g. from Latin-1)"))
		}
		if len(c.Title) > MaxChapterTitleBytes {
			errs = append(errs, fieldErr(field+".title", "longer than %d bytes", MaxChapterTitleBytes))
		} else if !printable(c.Title) || !utf8.ValidString(c.Title) {
			errs = append(errs, fieldErr(field+".title", "must be printable text without control characters"))
		}
		if len(c.Revision) > MaxRevisionBytes {
			errs = append(errs, fieldErr(field+".revision", "longer than %d bytes", MaxRevisionBytes))
		} else if !printable(c.Revision) || !utf8.ValidString(c.Revision) {
			errs = append(errs, fieldErr(field+".revision", "must be printable text without control characters"))
		}
	}
	return errs
}

// validateManualOptions refuses the options a manual from chapters does
// not take (yet), and options.toc without chapters.
func (o Options) validateManual(chapters bool) []error {
	if !chapters {
		var errs []error
		for _, f := range []struct {
			name string
			set  bool
		}{{"options.toc", o.TOC}, {"options.lang", o.Lang != ""}, {"options.pdf_ua", o.PDFUA}, {"options.pdf_a", o.PDFA != ""}} {
			if f.set {
				errs = append(errs, fieldErr(f.name, "only with source.chapters (a single page is a manual of one chapter)"))
			}
		}
		return errs
	}
	var errs []error
	if o.PDFA != "" && o.Encryption != nil {
		errs = append(errs, fieldErr("options.pdf_a", "PDF/A forbids encryption: options.pdf_a and options.encryption cannot be combined"))
	}
	if o.PDFA != "" || o.PDFUA {
		// Both are made by the assembly; the post-processing of these
		// options rewrites the file without keeping what they claim.
		for _, f := range []struct {
			name string
			set  bool
		}{{"options.watermark", o.Watermark != nil}, {"options.metadata", o.Metadata != nil}} {
			if f.set {
				errs = append(errs, fieldErr(f.name, "not supported with options.pdf_a or options.pdf_ua: the manual's title is its manual_id and version"))
			}
		}
	}
	if o.Lang != "" && !o.Tagged && !o.PDFUA {
		errs = append(errs, fieldErr("options.lang", "is the language of a tagged manual: set options.tagged or options.pdf_ua"))
	}
	for _, f := range []struct {
		name string
		set  bool
		why  string
	}{
		{"options.page_ranges", o.PageRanges != "", "not supported with source.chapters: list the chapters you want"},
	} {
		if f.set {
			errs = append(errs, fieldErr(f.name, "%s", f.why))
		}
	}
	return errs
}

// ChapterSettings are the print settings of every chapter of a manual
// with settings s: the manual's, without what applies to the assembled
// file only (the document options, the table of contents, the headers and
// footers).
func ChapterSettings(s PrintSettings) PrintSettings {
	s.Document = nil
	s.TOC = false
	s.Structure, s.Lang, s.PDFUA, s.PDFA = false, "", false, ""
	// The manual's headers and footers are drawn over the assembled pages,
	// counting the manual's; the chapters keep only the margins for them.
	s.HeaderHTML, s.FooterHTML = "", ""
	return s
}

// ChapterHeadingMarks reports whether the chapters of a manual with
// options o print untagged and without Chromium's outline, carrying a
// heading mark per heading from which the assembly builds the outline:
// a manual with an outline that is not tagged. Chromium's own outline
// needs its tagged structure, which makes a long chapter's print markedly
// slower.
// A tagged manual's chapters keep Chromium's outline and structure. The
// options of a chapter's envelope (ChapterEnvelope) answer as the
// manual's do.
func ChapterHeadingMarks(o Options) bool {
	return o.Outline && !o.Tagged && !o.PDFUA
}

// ChapterKey is the storage key of chapter i of the envelope's manual:
// ChapterKeyPrefix plus 32 hex digits of SHA-256 over the chapter's
// identity (its canonical URL or its content's hash, its revision, or the
// manual's version for a URL chapter without one) and its print settings.
// The envelope must have passed Validate.
func (p Envelope) ChapterKey(i int) string {
	return ChapterKeyPrefix + p.chapterHash(i)[:32] + ".pdf"
}

func (p Envelope) chapterHash(i int) string {
	c := p.Source.Chapters[i]
	type identity struct {
		URL        string `json:"url,omitempty"`
		HTMLSHA256 string `json:"html_sha256,omitempty"`
		Revision   string `json:"revision,omitempty"`
		// Version is the manual's, for a URL chapter without a revision:
		// nothing else says its content changed.
		Version string `json:"version,omitempty"`
	}
	canonical := struct {
		V        int           `json:"v"`
		Kind     string        `json:"kind"`
		Source   identity      `json:"source"`
		Settings PrintSettings `json:"settings"`
		// Anchors: a chapter is printed with its anchor marks.
		Anchors bool `json:"anchors"`
		// Headings: with heading marks instead of Chromium's outline
		// (ChapterHeadingMarks). A worker of an earlier release keys the
		// same chapter without it, so neither takes the other's print.
		Headings bool `json:"headings,omitempty"`
		// HeadingAnchors: its heading marks carry the anchors of their
		// headings, which get no marks of their own; an assembly of an
		// earlier release would find no such anchor, so the chapter is
		// keyed apart from its earlier prints.
		HeadingAnchors bool `json:"heading_anchors,omitempty"`
	}{V: PayloadVersion, Kind: "chapter", Settings: ChapterSettings(p.Options.Settings()), Anchors: true,
		Headings: ChapterHeadingMarks(p.Options), HeadingAnchors: ChapterHeadingMarks(p.Options)}
	canonical.Source.Revision = c.Revision
	if c.HTML != "" {
		sum := sha256.Sum256([]byte(c.HTML))
		canonical.Source.HTMLSHA256 = hex.EncodeToString(sum[:])
	} else {
		canonical.Source.URL = CanonicalURL(c.URL)
		if c.Revision == "" {
			canonical.Source.Version = p.Version
		}
	}
	b, err := json.Marshal(canonical)
	if err != nil {
		panic("spec: canonical form is always marshalable: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// chaptersIdentity is what a manual's key hashes of its chapters: each
// one's key and title, in order.
func (p Envelope) chaptersIdentity() []chapterIdentity {
	if len(p.Source.Chapters) == 0 {
		return nil
	}
	ids := make([]chapterIdentity, len(p.Source.Chapters))
	for i, c := range p.Source.Chapters {
		ids[i] = chapterIdentity{Key: p.ChapterKey(i), Title: c.Title}
	}
	return ids
}

type chapterIdentity struct {
	Key   string `json:"key"`
	Title string `json:"title,omitempty"`
}

// chapterOptions are the options a manual's chapter is printed with: the
// print settings, without what the assembly adds to the whole manual.
func (o Options) chapterOptions() Options {
	o.Metadata, o.Watermark, o.Encryption, o.TOC = nil, nil, nil, false
	o.HeaderHTML, o.FooterHTML = "", "" // drawn over the assembled manual
	o.Tagged = o.Tagged || o.PDFUA      // a tagged chapter; the rest is the assembly's
	o.Lang, o.PDFUA, o.PDFA = "", false, ""
	return o
}

// ChapterEnvelope is the envelope of chapter i printed on its own: the
// manual's identity and print settings, the chapter as its source.
func (p Envelope) ChapterEnvelope(i int) Envelope {
	c := p.Source.Chapters[i]
	opts := p.Options.chapterOptions()
	return Envelope{V: p.V, ManualID: p.ManualID, Version: p.Version,
		Source: EnvelopeSource{URL: c.URL, HTML: c.HTML}, Options: opts, Force: p.Force, RequestID: p.RequestID}
}

// ChapterTask is the payload of a pdf:chapter task: one chapter, with what
// its key depends on (the manual's version and options), and the manual's
// task, whose progress it counts and whose end makes it moot. Only a
// worker writes one.
type ChapterTask struct {
	V          int     `json:"v"`
	ManualTask string  `json:"manual_task"`
	Index      int     `json:"index"`
	ManualID   string  `json:"manual_id"`
	Version    string  `json:"version"`
	Chapter    Chapter `json:"chapter"`
	Options    Options `json:"options,omitzero"`
	Force      bool    `json:"force,omitempty"`
}

// ChapterTask is chapter i of the manual p as a task of its own.
func (p Envelope) ChapterTask(manualTask string, i int) ChapterTask {
	opts := p.Options.chapterOptions()
	// The manual's version: a chapter of an envelope that needs a newer
	// worker needs it too.
	return ChapterTask{V: p.V, ManualTask: manualTask, Index: i, ManualID: p.ManualID, Version: p.Version,
		Chapter: p.Source.Chapters[i], Options: opts, Force: p.Force}
}

// Manual is the one-chapter manual the task stands for: its ChapterKey(0)
// and ChapterEnvelope(0) are the chapter's.
func (c ChapterTask) Manual() Envelope {
	return Envelope{V: c.V, ManualID: c.ManualID, Version: c.Version,
		Source: EnvelopeSource{Chapters: []Chapter{c.Chapter}}, Options: c.Options, Force: c.Force}
}

// DecodeChapterTask parses a pdf:chapter payload strictly, like
// DecodeEnvelope.
func DecodeChapterTask(data []byte) (ChapterTask, error) {
	if len(data) > MaxPayloadBytes {
		return ChapterTask{}, fieldErr("payload", "larger than %d bytes", MaxPayloadBytes)
	}
	var c ChapterTask
	if err := checkVersion(data, &ChapterTask{}); err != nil {
		return ChapterTask{}, err
	}
	if err := decodeStrict(bytes.NewReader(data), &c); err != nil {
		return ChapterTask{}, err
	}
	if c.ManualTask == "" || len(c.ManualTask) > maxIdentifierLength || !printable(c.ManualTask) {
		return ChapterTask{}, fieldErr("manual_task", "must name the manual's task")
	}
	if c.Index < 0 || c.Index >= MaxChapters {
		return ChapterTask{}, fieldErr("index", "must be between 0 and %d", MaxChapters-1)
	}
	return c, nil
}
