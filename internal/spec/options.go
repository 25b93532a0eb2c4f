package spec

// Paper sizes in inches (portrait), the names accepted in Options.Paper.
var paperSizes = map[string][2]float64{
	"A3":     {11.69, 16.54},
	"A4":     {8.27, 11.69},
	"A5":     {5.83, 8.27},
	"Letter": {8.5, 11},
	"Legal":  {8.5, 14},
}

// PaperNames lists the accepted Options.Paper values in a stable order.
var PaperNames = []string{"A4", "Letter", "Legal", "A3", "A5"}

// PaperSize returns the portrait width and height in inches of a paper name.
func PaperSize(name string) (width, height float64, ok bool) {
	s, ok := paperSizes[name]
	return s[0], s[1], ok
}

// Defaults applied by Normalize when a field is left out.
const (
	DefaultPaper    = "A4"
	DefaultScale    = 1.0
	DefaultMarginMM = 10.0
	DefaultMedia    = "print"
)

// Margins are page margins in millimetres. A nil field takes DefaultMarginMM.
type Margins struct {
	Top    *float64 `json:"top,omitempty"`
	Right  *float64 `json:"right,omitempty"`
	Bottom *float64 `json:"bottom,omitempty"`
	Left   *float64 `json:"left,omitempty"`
}

// Options are the print options of an export. The zero value is valid and
// means: A4 portrait, 10 mm margins, backgrounds printed, scale 1, print media,
// no header or footer, untagged and without outline.
//
// Pointer fields distinguish "not given" from an explicit false or zero, so
// a request that spells out a default and one that leaves it out normalize to
// the same options and therefore name the same artifact.
type Options struct {
	Paper             string   `json:"paper,omitempty"`
	Landscape         bool     `json:"landscape,omitempty"`
	MarginMM          *Margins `json:"margin_mm,omitempty"`
	PrintBackground   *bool    `json:"print_background,omitempty"`
	Scale             *float64 `json:"scale,omitempty"`
	HeaderHTML        string   `json:"header_html,omitempty"`
	FooterHTML        string   `json:"footer_html,omitempty"`
	Outline           bool     `json:"outline,omitempty"`
	Tagged            bool     `json:"tagged,omitempty"`
	WaitFor           string   `json:"wait_for,omitempty"`
	Media             string   `json:"media,omitempty"`
	PageRanges        string   `json:"page_ranges,omitempty"`
	PreferCSSPageSize bool     `json:"prefer_css_page_size,omitempty"`
	// FailOnResourceErrors fails the export for good, storing nothing, when
	// a sub-resource failed, answered ≥ 400 or was blocked.
	FailOnResourceErrors bool `json:"fail_on_resource_errors,omitempty"`
	// FailOnConsoleErrors does the same for uncaught exceptions and
	// console.error lines.
	FailOnConsoleErrors bool `json:"fail_on_console_errors,omitempty"`
	// Metadata, Watermark and Encryption are the document options
	// (document.go): written into the printed PDF after printing.
	Metadata   *Metadata   `json:"metadata,omitempty"`
	Watermark  *Watermark  `json:"watermark,omitempty"`
	Encryption *Encryption `json:"encryption,omitempty"`
	// TOC puts a table of contents, with the manual's page numbers, before
	// the first chapter (source.chapters only).
	TOC bool `json:"toc,omitempty"`
	// FastWebView linearizes the finished PDF (qpdf --linearize), so a
	// reader's viewer shows the first page after fetching its first bytes
	// with Range requests instead of the whole file.
	FastWebView bool `json:"fast_web_view,omitempty"`
	// Lang is the language (BCP 47: "en", "de-CH") an accessible manual
	// declares; "" takes its first chapter's (the page's lang attribute).
	// source.chapters with tagged or pdf_ua only.
	Lang string `json:"lang,omitempty"`
	// PDFUA asks for a manual that claims PDF/UA-1: tagged, identified in
	// its XMP metadata, and warned about what its chapters lack
	// (docs/EXPORTS.md). source.chapters only; implies Tagged.
	PDFUA bool `json:"pdf_ua,omitempty"`
	// PDFA is the PDF/A conformance a manual claims: "2b" (PDF/A-2b) or
	// "". source.chapters only; refused with Encryption.
	PDFA string `json:"pdf_a,omitempty"`
	// Screenshot makes the export an image of the page, not a PDF
	// (screenshot.go).
	Screenshot *Screenshot `json:"screenshot,omitempty"`
	// Page are the page's load, failure and print options (page.go).
	Page *PageOptions `json:"page,omitempty"`
}

// PDFALevels are the accepted Options.PDFA values.
var PDFALevels = []string{"2b"}

// HasDocumentOptions reports whether o asks for metadata, a watermark,
// encryption or a fast web view: whether the PDF is post-processed
// instead of streamed.
func (o Options) HasDocumentOptions() bool {
	return o.Metadata != nil || o.Watermark != nil || o.Encryption != nil || o.FastWebView
}

// PrintSettings are Options with every default applied and every value
// resolved: what the renderer needs and what the artifact key hashes.
type PrintSettings struct {
	Paper             string  `json:"paper"`
	PaperWidthIn      float64 `json:"paper_width_in"`
	PaperHeightIn     float64 `json:"paper_height_in"`
	Landscape         bool    `json:"landscape"`
	MarginTopMM       float64 `json:"margin_top_mm"`
	MarginRightMM     float64 `json:"margin_right_mm"`
	MarginBottomMM    float64 `json:"margin_bottom_mm"`
	MarginLeftMM      float64 `json:"margin_left_mm"`
	PrintBackground   bool    `json:"print_background"`
	Scale             float64 `json:"scale"`
	HeaderHTML        string  `json:"header_html"`
	FooterHTML        string  `json:"footer_html"`
	Outline           bool    `json:"outline"`
	Tagged            bool    `json:"tagged"`
	WaitFor           string  `json:"wait_for"`
	Media             string  `json:"media"`
	PageRanges        string  `json:"page_ranges"`
	PreferCSSPageSize bool    `json:"prefer_css_page_size"`
	// Document is the resolved document options, nil when there are none
	// (so the canonical form of other exports is what it always was).
	Document *DocumentSettings `json:"document,omitempty"`
	// TOC: a manual's table of contents (omitted when false, for the same
	// reason).
	TOC bool `json:"toc,omitempty"`
	// Structure: an assembled manual keeps its chapters' structure trees
	// (options.tagged or pdf_ua with source.chapters). A single page's
	// structure is Chromium's, which Tagged says: the key of a single
	// page leaves Structure out (Envelope.contentHash). Lang, PDFUA and
	// PDFA are the manual's alone too. All omitted when empty, for the
	// same reason as Document.
	Structure bool   `json:"structure,omitempty"`
	Lang      string `json:"lang,omitempty"`
	PDFUA     bool   `json:"pdf_ua,omitempty"`
	PDFA      string `json:"pdf_a,omitempty"`
	// Screenshot: the export is an image (omitted for a PDF, for the same
	// reason as Document).
	Screenshot *ScreenshotSettings `json:"screenshot,omitempty"`
	// Page: the page options resolved (omitted when none, for the same
	// reason as Document).
	Page *PageOptions `json:"page,omitempty"`
	// FailOn is not part of the artifact's identity (json "-"): it does not
	// change the PDF, only whether one with warnings is acceptable.
	FailOn FailOn `json:"-"`
}

// FailOn selects the warning kinds that fail an export.
type FailOn struct {
	ResourceErrors bool // resource and blocked warnings
	ConsoleErrors  bool // console warnings
}

// Offends reports whether w is a warning f fails on.
func (f FailOn) Offends(w Warning) bool {
	switch w.Kind {
	case WarningResource, WarningBlocked:
		return f.ResourceErrors
	case WarningConsole:
		return f.ConsoleErrors
	}
	return false
}

// Settings resolves o into PrintSettings. It assumes o passed Validate; an
// unknown paper name falls back to DefaultPaper.
func (o Options) Settings() PrintSettings {
	s := PrintSettings{
		Paper:           o.Paper,
		Landscape:       o.Landscape,
		PrintBackground: true,
		Scale:           DefaultScale,
		HeaderHTML:      o.HeaderHTML,
		FooterHTML:      o.FooterHTML,
		Outline:         o.Outline,
		// Chromium builds the outline from the structure tree, and an
		// accessible manual from its chapters' trees.
		Tagged:            o.Tagged || o.Outline || o.PDFUA,
		WaitFor:           o.WaitFor,
		Media:             o.Media,
		PageRanges:        o.PageRanges,
		PreferCSSPageSize: o.PreferCSSPageSize,
		FailOn:            FailOn{ResourceErrors: o.FailOnResourceErrors, ConsoleErrors: o.FailOnConsoleErrors},
		MarginTopMM:       DefaultMarginMM,
		MarginRightMM:     DefaultMarginMM,
		MarginBottomMM:    DefaultMarginMM,
		MarginLeftMM:      DefaultMarginMM,
		Document:          o.documentSettings(),
		TOC:               o.TOC,
		Structure:         o.Tagged || o.PDFUA,
		Lang:              o.Lang,
		PDFUA:             o.PDFUA,
		PDFA:              o.PDFA,
		Screenshot:        o.Screenshot.settings(),
		Page:              o.Page,
	}
	if s.Paper == "" {
		s.Paper = DefaultPaper
	}
	w, h, ok := PaperSize(s.Paper)
	if !ok {
		s.Paper = DefaultPaper
		w, h, _ = PaperSize(DefaultPaper)
	}
	s.PaperWidthIn, s.PaperHeightIn = w, h
	s.applyPage()
	if o.PrintBackground != nil {
		s.PrintBackground = *o.PrintBackground
	}
	if o.Scale != nil {
		s.Scale = *o.Scale
	}
	if s.Media == "" && s.Screenshot != nil {
		s.Media = "screen" // an image shows the page as a screen does
	}
	if s.Media == "" {
		s.Media = DefaultMedia
	}
	if m := o.MarginMM; m != nil {
		for _, f := range []struct {
			src *float64
			dst *float64
		}{{m.Top, &s.MarginTopMM}, {m.Right, &s.MarginRightMM}, {m.Bottom, &s.MarginBottomMM}, {m.Left, &s.MarginLeftMM}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
	}
	return s
}
