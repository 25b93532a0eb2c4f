package exportclient

import (
	"github.com/pdfexport/pdfexport/internal/queue/fleet"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The wire contract's types, as an API server uses them: the fields and
// JSON names of schema v1 (api/openapi.yaml), and no behaviour of the
// worker's. They are exportclient's own, not the worker's internal types,
// so that what the worker does with a request (applying credentials,
// resolving print settings, building the envelope) is no public API; the
// client converts at its boundary (convert.go), and types_test.go fails
// when a field of the worker's types has no counterpart here.

// PayloadVersion is Payload.V, the version of the request schema.
const PayloadVersion = spec.PayloadVersion

// MaxChapters bounds PayloadSource.Chapters (and Request.Chapters).
const MaxChapters = spec.MaxChapters

// Payload is the raw request (schema v1, the JSON body of POST
// /v1/exports), for callers that already hold one, such as the HTTP
// enqueue API. It is what a caller may send: the fields only an enqueuer
// writes into the queued envelope (source.credentials_ref,
// source.html_ref, traceparent, tracestate, encryption_ref, client) are
// not in it, and DecodePayload refuses them.
type Payload struct {
	V         int           `json:"v"` // PayloadVersion
	ManualID  string        `json:"manual_id"`
	Version   string        `json:"version"`
	Source    PayloadSource `json:"source"`
	Options   Options       `json:"options,omitzero"`
	Force     bool          `json:"force,omitempty"`
	RequestID string        `json:"request_id,omitempty"`
	Callback  *Callback     `json:"callback,omitempty"`
}

// PayloadSource is what to print: a URL on ALLOWED_HOSTS (with,
// optionally, per-export credentials for its origin), an inline HTML
// document, or the chapters of a manual. Exactly one of URL, HTML and
// Chapters is set.
type PayloadSource struct {
	URL  string `json:"url,omitempty"`
	HTML string `json:"html,omitempty"`
	// Chapters make the export a manual of many pages (at most
	// MaxChapters).
	Chapters []Chapter `json:"chapters,omitempty"`
	// Site makes the export a manual of the pages a docs site's
	// navigation lists (docs/EXPORTS.md).
	Site *Site `json:"site,omitempty"`
	// Credentials (source.headers, source.cookies) render URL as one of
	// the caller's users.
	Credentials
}

// Credentials are per-export headers and cookies (Request.Headers and
// Request.Cookies, source.headers and source.cookies of a Payload). They
// are secrets: stored beside the task until it is final, never in it.
type Credentials struct {
	Headers map[string]string `json:"headers,omitempty"`
	Cookies []Cookie          `json:"cookies,omitempty"`
}

// Cookie is a cookie of Request.Cookies.
type Cookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Path limits the cookie to request paths under it (RFC 6265 path
	// match). "" is "/".
	Path string `json:"path,omitempty"`
}

// Site is a manual straight from a docs site (Request.Site): the worker
// reads the chapters, in order, from the navigation of the start page URL,
// with their titles, and derives each one's revision from its content
// unless Revision gives one, so a new release of the site prints only the
// chapters that changed. An export of a site needs workers of envelope
// version 3 (docs/COMPATIBILITY.md).
type Site struct {
	// URL is the start page (a host on ALLOWED_HOSTS); only pages of its
	// origin become chapters.
	URL string `json:"url"`
	// Nav is where the navigation is: "" (told from the page), "sphinx",
	// "mkdocs", "docusaurus", "antora", "sitemap", or a CSS selector of
	// its links.
	Nav string `json:"nav,omitempty"`
	// Include and Exclude filter the chapters by path with globs (*
	// within a segment, ** across, ? one character).
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// MaxChapters keeps the first MaxChapters chapters; 0: all (at most
	// MaxChapters).
	MaxChapters int `json:"max_chapters,omitempty"`
	// Revision, when set, is every chapter's revision (the site build's
	// commit), instead of one derived from each chapter's content.
	Revision string `json:"revision,omitempty"`
}

// Chapter is one chapter of a manual (Request.Chapters): exactly one of
// URL and HTML.
type Chapter struct {
	URL  string `json:"url,omitempty"`
	HTML string `json:"html,omitempty"`
	// Title is the chapter's entry in the outline and the table of
	// contents; "" takes the title of the printed page.
	Title string `json:"title,omitempty"`
	// Revision names the chapter's content. A URL chapter without one is
	// printed again for every version of the manual; with one, only when
	// the revision changes. An HTML chapter is named by its content, and a
	// revision adds to that.
	Revision string `json:"revision,omitempty"`
}

// Options are the print options; the zero value prints A4 portrait, 10 mm
// margins, backgrounds printed, scale 1, print media, no header or footer.
// Pointer fields tell "not given" from an explicit false or zero.
type Options struct {
	Paper             string   `json:"paper,omitempty"` // A4, Letter, Legal, A3, A5
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
	// Metadata, Watermark and Encryption are written into the printed PDF.
	Metadata   *Metadata   `json:"metadata,omitempty"`
	Watermark  *Watermark  `json:"watermark,omitempty"`
	Encryption *Encryption `json:"encryption,omitempty"`
	// TOC puts a table of contents before the first chapter (chapters only).
	TOC bool `json:"toc,omitempty"`
	// FastWebView linearizes the finished PDF, so a viewer shows the first
	// page before the whole file arrived.
	FastWebView bool `json:"fast_web_view,omitempty"`
	// Lang is the language (BCP 47) a tagged manual declares; "" takes
	// its first chapter's (chapters with Tagged or PDFUA only).
	Lang string `json:"lang,omitempty"`
	// PDFUA asks for a manual that claims PDF/UA-1, with warnings for what
	// its chapters lack (chapters only; implies Tagged).
	PDFUA bool `json:"pdf_ua,omitempty"`
	// PDFA is the PDF/A level a manual claims: "2b" or "" (chapters only;
	// not with Encryption).
	PDFA string `json:"pdf_a,omitempty"`
	// Screenshot makes the export an image of the page (PNG, JPEG or
	// WebP) instead of a PDF: a single page only, without the options
	// that shape a PDF. It needs workers of envelope version 4.
	Screenshot *Screenshot `json:"screenshot,omitempty"`
	// Page are the page's load, failure and print options (page.go).
	Page *PageOptions `json:"page,omitempty"`
}

// Margins are page margins in millimetres; a nil field is 10 mm.
type Margins struct {
	Top    *float64 `json:"top,omitempty"`
	Right  *float64 `json:"right,omitempty"`
	Bottom *float64 `json:"bottom,omitempty"`
	Left   *float64 `json:"left,omitempty"`
}

// Metadata is Options.Metadata: the PDF's title, author, subject,
// keywords, creator and language (a BCP 47 tag such as "en" or "de-CH").
type Metadata struct {
	Title    string   `json:"title,omitempty"`
	Author   string   `json:"author,omitempty"`
	Subject  string   `json:"subject,omitempty"`
	Keywords []string `json:"keywords,omitempty"`
	Creator  string   `json:"creator,omitempty"`
	Language string   `json:"language,omitempty"`
}

// Watermark is Options.Watermark: text on every page. Nil fields take the
// defaults.
type Watermark struct {
	Text       string   `json:"text"`
	Opacity    *float64 `json:"opacity,omitempty"`      // 0–1, default 0.15
	Angle      *float64 `json:"angle,omitempty"`        // degrees counter-clockwise, -180–180, default 45
	FontSizePt *float64 `json:"font_size_pt,omitempty"` // 4–400, default 48
}

// Encryption is Options.Encryption: AES-256 with the passwords (secrets,
// stored beside the task until it is final, never in it) and the
// permissions of PermissionNames. OwnerPassword is required.
type Encryption struct {
	UserPassword  string   `json:"user_password,omitempty"`
	OwnerPassword string   `json:"owner_password,omitempty"`
	Allow         []string `json:"allow,omitempty"`
}

// Callback asks for the outcome to be POSTed to URL (a host on
// CALLBACK_ALLOWED_HOSTS), signed with CALLBACK_SECRET.
type Callback struct {
	URL string `json:"url"`
}

// Result is what a finished export reports.
type Result struct {
	ArtifactKey string `json:"artifact_key"` // relative to the storage prefix
	URL         string `json:"url"`
	ETag        string `json:"etag"`
	Bytes       int64  `json:"bytes"`
	Pages       int    `json:"pages"`
	Rendered    bool   `json:"rendered"` // false: a stored artifact was reused
	FailOpen    bool   `json:"fail_open"`
	RenderMS    int64  `json:"render_ms"`
	WaitedMS    int64  `json:"waited_ms"`
	// DownloadURL is bin/api's GET /v1/exports/{id}/pdf for this export,
	// when the worker knows API_PUBLIC_URL.
	DownloadURL string `json:"download_url,omitempty"`
	// Warnings are what the render could not load or saw fail (at most 20;
	// WarningsOmitted counts the rest).
	Warnings        []Warning `json:"warnings,omitempty"`
	WarningsOmitted int       `json:"warnings_omitted,omitempty"`
	// Chapters counts a manual's chapters (chapters only).
	Chapters *ChapterCounts `json:"chapters,omitempty"`
	// Site is how a manual from a site found its chapters (Site only).
	Site *SiteDiscovery `json:"site,omitempty"`
}

// SiteDiscovery is how the worker read a site's chapters: the navigation
// it found (a generator's name, "sitemap", "selector" or "navigation"),
// how long the discovery took and how many requests it made.
type SiteDiscovery struct {
	Nav         string `json:"nav"`
	DiscoveryMS int64  `json:"discovery_ms"`
	Requests    int    `json:"requests"`
}

// Warning is one thing that makes a PDF possibly incomplete: Kind is
// resource (a sub-resource failed or answered ≥ 400), blocked (refused by
// the allowlist or the egress guard) or console (an uncaught exception or
// a console.error line).
type Warning struct {
	Kind    string `json:"kind"`
	URL     string `json:"url,omitempty"` // redacted: no password, no query values
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

func (w Warning) String() string { return spec.Warning(w).String() }

// ChapterCounts are a manual's chapters in its Result: how many this
// export printed and how many it found stored.
type ChapterCounts struct {
	Total    int `json:"total"`
	Rendered int `json:"rendered"`
	Reused   int `json:"reused"`
}

// Final is the JSON body of a callback: the export's final outcome.
type Final struct {
	TaskID    string  `json:"task_id"`
	State     string  `json:"state"` // completed | failed | canceled
	ManualID  string  `json:"manual_id,omitempty"`
	Version   string  `json:"version,omitempty"`
	RequestID string  `json:"request_id,omitempty"`
	Result    *Result `json:"result,omitempty"`
	Error     string  `json:"error,omitempty"`
	// Kind is what failed (timeout, blocked, http_status, page_errors,
	// page_ranges, limit), empty otherwise.
	Kind string `json:"kind,omitempty"`
	// Detail is what a failure of its kind names, when the kind has any.
	Detail  *FailureDetail `json:"detail,omitempty"`
	Retried int            `json:"retried"` // attempts before the final one
}

// FailureDetail is what a failure of its kind names, for a caller that
// words the failure its own way. Only the fields of its kind are set:
// Check (the page option that failed a page_errors export) and Offenders
// (a line each); Status and StatusText (the main document's answer of an
// http_status failure); Selector (a no_element failure's).
type FailureDetail struct {
	Check      string   `json:"check,omitempty"`
	Offenders  []string `json:"offenders,omitempty"`
	Status     int      `json:"status,omitempty"`
	StatusText string   `json:"status_text,omitempty"`
	Selector   string   `json:"selector,omitempty"`
}

// FieldError names a rejected field (its JSON path, e.g. "options.scale")
// and the rule it broke. Every FieldError matches ErrInvalid; one naming a
// field only an enqueuer writes also matches ErrEnvelopeOnly.
type FieldError struct {
	Field string
	Rule  string

	envelopeOnly bool
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// Is makes the error match ErrInvalid (and ErrEnvelopeOnly, for a field
// only an enqueuer writes).
func (e *FieldError) Is(target error) bool {
	return target == ErrInvalid || (e.envelopeOnly && target == ErrEnvelopeOnly)
}

// OlderWorker is a worker process of an OlderWorkersError.
type OlderWorker struct {
	Host string
	PID  int
	// Version is its build's version; "" for a worker of a release before
	// announcements.
	Version string
	// Envelope is the newest envelope version it serves.
	Envelope int
}

func (w OlderWorker) String() string { return fleet.Worker(w).String() }
