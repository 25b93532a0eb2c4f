package spec

import (
	"errors"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// identifierPattern is the rule of manual_id and version, as validIdentifier
// checks it (compiling the regexp would cost every process start, the CLI
// included, for one check).
const identifierPattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`

func validIdentifier(v string) bool {
	if len(v) == 0 || len(v) > maxIdentifierLength {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

var pageRangesRE = regexp.MustCompile(`^\s*\d+\s*(-\s*\d+\s*)?(,\s*\d+\s*(-\s*\d+\s*)?)*$`)

// Hosts are the allowlists a payload's URLs are checked against.
type Hosts struct {
	Sources   HostList // ALLOWED_HOSTS: a source URL's host; nil allows none
	Callbacks HostList // CALLBACK_ALLOWED_HOSTS: callback.url's host; nil or empty refuses callbacks
}

// HostList is an allowlist of hosts (allowlist.List implements it): the
// contract names what a URL may point at without depending on the network
// code that enforces it.
type HostList interface {
	// AllowsHost reports whether host (a name or an IP literal in any
	// notation) on port may be reached.
	AllowsHost(host, port string) bool
	// Empty reports whether the list allows nothing.
	Empty() bool
	// Refusal says why host:port is not allowed, naming the list's
	// setting (listName), e.g. "host 10.0.0.1:80 is not allowed: not on
	// ALLOWED_HOSTS".
	Refusal(host, port, listName string) string
}

// Validate checks every rule of the v1 contract and returns all violations
// joined; each is a *FieldError naming the field and the rule, and all match
// ErrInvalid.
func (e Envelope) Validate(hosts Hosts) error {
	errs := e.common().validate(hosts)
	if fe := validateEnvelopeVersion(e.V); fe != nil {
		errs = append(errs, fe)
	}
	errs = append(errs, validateSource(e.Source.URL, e.Source.HTML, e.Source.HTMLRef, e.Source.Chapters, e.Source.Site, hosts.Sources)...)
	errs = append(errs, e.Source.Credentials.validate(e.Source.URL)...)
	errs = append(errs, e.Options.validateManual(e.Source.Chapters != nil || e.Source.Site != nil)...)
	errs = append(errs, e.validateTraceContext()...)
	errs = append(errs, e.Options.validateDocument(true)...)
	errs = append(errs, e.Options.validateScreenshot(e.Source.Chapters != nil || e.Source.Site != nil)...)
	errs = append(errs, e.EncryptionRef.validate(e.Options.Encryption)...)
	errs = append(errs, e.PageSecretsRef.validate(e.Options.Page)...)
	if e.Client != "" {
		if fe := validateIdentifier("client", e.Client); fe != nil {
			errs = append(errs, fe)
		}
	}
	return errors.Join(errs...)
}

// ValidateClientName checks the name of an HTTP API client (Envelope.Client,
// API_CLIENTS_FILE) with the rule of manual_id: it is logged and labels
// metrics, so it must be a plain identifier.
func ValidateClientName(name string) error {
	if fe := validateIdentifier("client", name); fe != nil {
		return fe
	}
	return nil
}

// validate checks the fields requests and envelopes share.
func (c common) validate(hosts Hosts) []error {
	var errs []error
	add := func(e *FieldError) { errs = append(errs, e) }
	// "v" is the callers' to check: requests and envelopes differ.
	if e := validateIdentifier("manual_id", c.ManualID); e != nil {
		add(e)
	}
	if e := validateIdentifier("version", c.Version); e != nil {
		add(e)
	}
	errs = append(errs, c.Options.validate()...)
	errs = append(errs, c.Options.Page.validate()...)
	if len(c.RequestID) > MaxRequestIDBytes {
		add(fieldErr("request_id", "longer than %d bytes", MaxRequestIDBytes))
	} else if !printable(c.RequestID) {
		add(fieldErr("request_id", "must be printable text without control characters"))
	}
	if e := c.Callback.validate(hosts.Callbacks); e != nil {
		add(e)
	}
	return errs
}

func validateIdentifier(field, v string) *FieldError {
	switch {
	case v == "":
		return fieldErr(field, "required")
	case !validIdentifier(v):
		return fieldErr(field, "must match %s (letters, digits, '.', '_', '-'; at most %d characters, starting with a letter or digit)", identifierPattern, maxIdentifierLength)
	case strings.Contains(v, ".."):
		return fieldErr(field, "must not contain '..'")
	}
	return nil
}

// validateSource checks a source: exactly one of a URL, an inline
// document, a manual's chapters and (envelopes only) a stored document's
// reference.
func validateSource(srcURL, html string, ref *HTMLRef, chapters []Chapter, site *Site, allowed HostList) []error {
	n := 0
	for _, set := range []bool{srcURL != "", html != "", ref != nil, chapters != nil, site != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return []error{fieldErr("source", "one of source.url, source.html, source.chapters or source.site is required")}
	case n > 1:
		return []error{fieldErr("source", "exactly one of source.url, source.html, source.chapters and source.site, not both")}
	case site != nil:
		return validateSite(site, allowed)
	case chapters != nil:
		if len(chapters) == 0 {
			return []error{fieldErr("source.chapters", "must list at least one chapter")}
		}
		return validateChapters(chapters, allowed)
	case html != "":
		if len(html) > MaxHTMLBytes {
			return []error{fieldErr("source.html", "larger than %d bytes (2 MiB)", MaxHTMLBytes)}
		}
		if !utf8.ValidString(html) {
			// JSON would turn the bad bytes into U+FFFD on the way to the
			// worker: a different document under a different key.
			return []error{fieldErr("source.html", "must be valid UTF-8 (convert the document, e.g. from Latin-1)")}
		}
		return nil
	case ref != nil:
		if len(ref.SHA256) != 64 || strings.Trim(ref.SHA256, "0123456789abcdef") != "" {
			return []error{fieldErr("source.html_ref.sha256", "must be 64 lower-case hex digits")}
		}
		if ref.Bytes < 1 || ref.Bytes > MaxHTMLBytes {
			return []error{fieldErr("source.html_ref.bytes", "must be between 1 and %d", MaxHTMLBytes)}
		}
		return nil
	}
	if err := ValidateURL(srcURL, allowed); err != nil {
		return []error{err}
	}
	return nil
}

// ValidateURL checks a source URL: absolute http(s), no credentials, host on
// the allowlist (IP literals in any notation are normalized first).
func ValidateURL(raw string, allowed HostList) *FieldError {
	return validateWebURL("source.url", "ALLOWED_HOSTS", raw, allowed)
}

// validateCallback checks callback.url like a source URL, against
// CALLBACK_ALLOWED_HOSTS.
func (c *Callback) validate(allowed HostList) *FieldError {
	switch {
	case c == nil:
		return nil
	case c.URL == "":
		return fieldErr("callback.url", "required when callback is given")
	case allowed == nil || allowed.Empty():
		return fieldErr("callback.url", "callbacks are disabled: CALLBACK_ALLOWED_HOSTS is empty")
	}
	return ValidateCallbackURL(c.URL, allowed)
}

// ValidateCallbackURL checks callback.url: absolute http(s), no
// credentials, host on CALLBACK_ALLOWED_HOSTS.
func ValidateCallbackURL(raw string, allowed HostList) *FieldError {
	return validateWebURL("callback.url", "CALLBACK_ALLOWED_HOSTS", raw, allowed)
}

func validateWebURL(field, listName, raw string, allowed HostList) *FieldError {
	if len(raw) > MaxURLBytes {
		return fieldErr(field, "longer than %d bytes", MaxURLBytes)
	}
	if !printable(raw) || strings.ContainsAny(raw, " \\") {
		return fieldErr(field, "must not contain spaces, backslashes or control characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fieldErr(field, "not a valid URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fieldErr(field, "scheme must be http or https, got %q", u.Scheme)
	}
	if u.User != nil {
		return fieldErr(field, "must not contain user credentials (user@host)")
	}
	if u.Host == "" || u.Hostname() == "" {
		return fieldErr(field, "must have a host")
	}
	port := u.Port()
	if port == "" {
		port = DefaultPort(u.Scheme)
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fieldErr(field, "port %q out of range 1-65535", port)
	}
	if allowed == nil {
		return fieldErr(field, "host %s is not allowed: %s is empty", net.JoinHostPort(u.Hostname(), port), listName)
	}
	if !allowed.AllowsHost(u.Hostname(), port) {
		return fieldErr(field, "%s", allowed.Refusal(u.Hostname(), port, listName))
	}
	return nil
}

// DefaultPort is the port a URL of scheme (http, https, ws, wss; any case)
// uses when it names none.
func DefaultPort(scheme string) string {
	if strings.EqualFold(scheme, "https") || strings.EqualFold(scheme, "wss") {
		return "443"
	}
	return "80"
}

func (o Options) validate() []error {
	var errs []error
	add := func(e *FieldError) { errs = append(errs, e) }
	if o.PDFA != "" && !slices.Contains(PDFALevels, o.PDFA) {
		add(fieldErr("options.pdf_a", "must be one of %s, got %q", strings.Join(PDFALevels, ", "), o.PDFA))
	}
	if o.Lang != "" && !validLang(o.Lang) {
		add(fieldErr("options.lang", "must be a BCP 47 language tag (\"en\", \"de-CH\") of at most %d characters", maxLangBytes))
	}
	if o.Paper != "" {
		if _, _, ok := PaperSize(o.Paper); !ok {
			add(fieldErr("options.paper", "must be one of %s, got %q", strings.Join(PaperNames, ", "), o.Paper))
		}
	}
	if m := o.MarginMM; m != nil {
		for _, f := range []struct {
			name string
			v    *float64
		}{{"top", m.Top}, {"right", m.Right}, {"bottom", m.Bottom}, {"left", m.Left}} {
			if f.v != nil && !(*f.v >= 0 && *f.v <= 100) { // NaN too
				add(fieldErr("options.margin_mm."+f.name, "must be between 0 and 100 mm, got %g", *f.v))
			}
		}
	}
	if o.Scale != nil && !(*o.Scale >= 0.1 && *o.Scale <= 2) { // NaN too
		add(fieldErr("options.scale", "must be between 0.1 and 2, got %g", *o.Scale))
	}
	for _, f := range []struct{ name, v string }{{"options.header_html", o.HeaderHTML}, {"options.footer_html", o.FooterHTML}} {
		if len(f.v) > MaxTemplateBytes {
			add(fieldErr(f.name, "longer than %d bytes", MaxTemplateBytes))
		} else if !utf8.ValidString(f.v) {
			add(fieldErr(f.name, "must be valid UTF-8"))
		}
	}
	if len(o.WaitFor) > MaxWaitForBytes {
		add(fieldErr("options.wait_for", "longer than %d bytes", MaxWaitForBytes))
	} else if !utf8.ValidString(o.WaitFor) {
		add(fieldErr("options.wait_for", "must be valid UTF-8"))
	}
	if o.Media != "" && o.Media != "print" && o.Media != "screen" {
		add(fieldErr("options.media", "must be print or screen, got %q", o.Media))
	}
	if o.PageRanges != "" {
		if e := validatePageRanges(o.PageRanges); e != nil {
			add(e)
		}
	}
	return errs
}

func validatePageRanges(s string) *FieldError {
	const field = "options.page_ranges"
	if len(s) > 256 || !pageRangesRE.MatchString(s) {
		return fieldErr(field, "must look like \"1-5, 8, 11-13\"")
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, errA := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var errB error
		if isRange {
			b, errB = strconv.Atoi(strings.TrimSpace(hi))
		}
		if errA != nil || errB != nil || a < 1 {
			return fieldErr(field, "page numbers start at 1")
		}
		if b < a {
			return fieldErr(field, "range %d-%d ends before it starts", a, b)
		}
	}
	return nil
}

func printable(s string) bool {
	for _, r := range s {
		if r == unicode.ReplacementChar || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// maxLangBytes bounds options.lang.
const maxLangBytes = 35

// validLang accepts the shape of a BCP 47 tag: a primary language of 2
// to 8 letters, then subtags of 1 to 8 letters or digits.
func validLang(s string) bool {
	if len(s) > maxLangBytes {
		return false
	}
	for i, sub := range strings.Split(s, "-") {
		if len(sub) < 1 || len(sub) > 8 || i == 0 && len(sub) < 2 {
			return false
		}
		for _, c := range sub {
			letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
			if !letter && (i == 0 || c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}
