package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// PayloadVersion is the schema version of requests ("v" of what callers
// send), and of envelopes that need nothing newer than version 1
// (compat.go: envelopes carry the version of the worker they need).
const PayloadVersion = 1

// Size limits. MaxPayloadBytes bounds what Decode reads, so a hostile client
// cannot make a worker or the HTTP API buffer an arbitrary document.
const (
	MaxHTMLBytes        = 2 << 20
	MaxURLBytes         = 8 << 10
	MaxTemplateBytes    = 64 << 10
	MaxWaitForBytes     = 4 << 10
	MaxRequestIDBytes   = 128
	MaxPayloadBytes     = MaxHTMLBytes + 4*MaxTemplateBytes + 64<<10
	maxIdentifierLength = 128
)

// Envelope is the queued payload of a pdf:export task (schema version 1):
// what a worker reads. Only an enqueuer (exportclient, and so bin/api and
// bin/enqueue) writes one, from a Request: it stores the request's secrets
// and a large inline document beside the task, owned by the task, and puts
// only references to them here, with the caller's trace context. Nothing in
// an envelope is a secret, since the dashboard and status readers see it.
type Envelope struct {
	V         int            `json:"v"`
	ManualID  string         `json:"manual_id"`
	Version   string         `json:"version"`
	Source    EnvelopeSource `json:"source"`
	Options   Options        `json:"options,omitzero"`
	Force     bool           `json:"force,omitempty"`
	RequestID string         `json:"request_id,omitempty"`
	// Callback, when set, is POSTed the outcome once the export is final.
	// It is not part of the artifact's identity.
	Callback *Callback `json:"callback,omitempty"`
	// Traceparent and Tracestate are the W3C trace context of whoever
	// enqueued the export (https://www.w3.org/TR/trace-context/): the
	// worker's spans join that trace. Optional, validated, not part of the
	// artifact's identity. Envelope-only: taken from the caller's context
	// or traceparent header, never from a request body.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
	// EncryptionRef names the passwords of options.encryption, stored
	// beside the task (envelope-only; the options keep only the
	// permissions).
	EncryptionRef *EncryptionRef `json:"encryption_ref,omitempty"`
	// PageSecretsRef names the headers and cookies of options.page,
	// stored beside the task (envelope-only; options.page keeps the rest).
	PageSecretsRef *PageSecretsRef `json:"page_secrets_ref,omitempty"`
	// Client is the name of the HTTP API client (API_CLIENTS_FILE) that
	// enqueued the export, which alone may read, cancel and download it
	// through the API. Envelope-only: the API writes the authenticated
	// client's name; empty for API_TOKEN, bin/enqueue and exportclient
	// callers, whose envelopes stay readable by workers of an earlier
	// release (which reject unknown fields). Not part of the artifact's
	// identity.
	Client string `json:"client,omitempty"`
}

// Callback asks for the outcome to be POSTed to URL (a host on
// CALLBACK_ALLOWED_HOSTS), signed with CALLBACK_SECRET (Standard Webhooks).
type Callback struct {
	URL string `json:"url"`
}

// EnvelopeSource is what to print: a URL on ALLOWED_HOSTS, an inline HTML
// document, a reference to an HTML document stored beside the task (a
// large inline document: it does not sit in the task for RESULT_RETENTION),
// or the chapters of a manual. Exactly one is set. A URL may come with a reference to per-export
// credentials stored beside the task.
type EnvelopeSource struct {
	URL         string          `json:"url,omitempty"`
	HTML        string          `json:"html,omitempty"`
	HTMLRef     *HTMLRef        `json:"html_ref,omitempty"`
	Credentials *CredentialsRef `json:"credentials_ref,omitempty"`
	// Chapters make the export a manual of many pages (chapters.go).
	Chapters []Chapter `json:"chapters,omitempty"`
	// Site makes the export a manual of the chapters a docs site's
	// navigation lists (site.go).
	Site *Site `json:"site,omitempty"`
}

// HTMLRef names an HTML document stored beside the task by its SHA-256: the
// same document gives the same artifact key whether it travels inline or by
// reference.
type HTMLRef struct {
	SHA256 string `json:"sha256"` // hex of the UTF-8 document
	Bytes  int    `json:"bytes"`  // its size, before compression
}

// Result is what a finished export task writes with its ResultWriter, and what
// `enqueue export --wait --json` and GET /v1/exports/{id} show.
type Result struct {
	ArtifactKey string `json:"artifact_key"`
	URL         string `json:"url"`
	ETag        string `json:"etag"`
	Bytes       int64  `json:"bytes"`
	Pages       int    `json:"pages"`
	Rendered    bool   `json:"rendered"`
	FailOpen    bool   `json:"fail_open"`
	RenderMS    int64  `json:"render_ms"`
	WaitedMS    int64  `json:"waited_ms"`
	// DownloadURL is bin/api's GET /v1/exports/{id}/pdf for this export,
	// when the worker knows API_PUBLIC_URL.
	DownloadURL string `json:"download_url,omitempty"`
	// Warnings are what the render that made the artifact could not load
	// or saw fail (at most MaxWarnings; WarningsOmitted counts the rest).
	// A reuser reports the warnings of that render.
	Warnings        []Warning `json:"warnings,omitempty"`
	WarningsOmitted int       `json:"warnings_omitted,omitempty"`
	// Chapters counts a manual's chapters (source.chapters only): how
	// many this export printed and how many it found stored.
	Chapters *ChapterCounts `json:"chapters,omitempty"`
	// Site is how a manual from source.site found its chapters.
	Site *SiteDiscovery `json:"site,omitempty"`
}

// SiteDiscovery is a discovery in a result: the navigation it read, how
// long it took and how many requests it made.
type SiteDiscovery struct {
	Nav         string `json:"nav"`
	DiscoveryMS int64  `json:"discovery_ms"`
	Requests    int    `json:"requests"`
}

// ChapterCounts are a manual's chapters in its result.
type ChapterCounts struct {
	Total    int `json:"total"`
	Rendered int `json:"rendered"`
	Reused   int `json:"reused"`
}

// Warning kinds.
const (
	WarningResource = "resource" // a sub-resource failed to load or answered ≥ 400
	WarningBlocked  = "blocked"  // a request the allowlist or the egress guard refused
	WarningConsole  = "console"  // an uncaught exception or a console.error line
	// WarningAccessibility: what an accessible manual (options.pdf_ua)
	// needs and its source lacks, naming the chapter and the element.
	WarningAccessibility = "accessibility"
)

// MaxWarnings bounds the warnings a result lists.
const MaxWarnings = 20

// Warning is one thing that makes a PDF possibly incomplete.
type Warning struct {
	Kind    string `json:"kind"`
	URL     string `json:"url,omitempty"` // redacted: no password, no query values
	Status  int    `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

func (w Warning) String() string {
	s := w.Kind
	if w.URL != "" {
		s += " " + w.URL
	}
	if w.Status != 0 {
		s += fmt.Sprintf(" answered %d", w.Status)
	}
	if w.Message != "" {
		s += ": " + w.Message
	}
	return s
}

// ErrInvalid is matched (errors.Is) by every validation and decoding error,
// so callers can tell bad input (never retried) from transient failures.
var ErrInvalid = errors.New("invalid export request")

// FieldError names the offending field (JSON path, e.g. "options.scale") and
// the rule it broke.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// Is makes every FieldError match ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// FirstField returns the field named by the first FieldError in err, or "".
func FirstField(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// DecodeEnvelope parses a queued payload strictly: an envelope of a newer
// version than this worker serves is refused first (ErrNewerEnvelope,
// naming the version it needs and the first field this worker does not
// know); then unknown fields, wrong
// types, trailing data and documents over MaxPayloadBytes are rejected with a
// FieldError. Raw credentials (source.headers, source.cookies) are refused:
// an envelope names them only by reference. It does not validate values;
// call Validate for that.
func DecodeEnvelope(data []byte) (Envelope, error) {
	if len(data) > MaxPayloadBytes {
		return Envelope{}, fieldErr("payload", "larger than %d bytes", MaxPayloadBytes)
	}
	var e Envelope
	if err := checkVersion(data, &Envelope{}); err != nil {
		return Envelope{}, err
	}
	if err := decodeStrict(bytes.NewReader(data), &e); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && (fe.Field == "headers" || fe.Field == "cookies") {
			return Envelope{}, fieldErr("source."+fe.Field, "per-export credentials travel beside the task, never in it: enqueue through exportclient, bin/api or bin/enqueue, which store them and queue source.credentials_ref")
		}
		return Envelope{}, err
	}
	return e, nil
}

func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonFieldError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fieldErr("payload", "unexpected data after the JSON object")
	}
	return nil
}

func jsonFieldError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "payload"
		}
		return fieldErr(field, "must be a JSON %s, got %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fieldErr("payload", "malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if name == "" {
			return fieldErr("payload", `unknown field ""`)
		}
		return fieldErr(name, "unknown field")
	case errors.Is(err, io.EOF):
		return fieldErr("payload", "empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fieldErr("payload", "truncated JSON")
	default:
		return fieldErr("payload", "%v", err)
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int64", "float64":
		return "number"
	case "struct", "ptr":
		return "object"
	default:
		return goKind
	}
}

// Encode marshals an envelope. It does not validate.
func (e Envelope) Encode() ([]byte, error) {
	return json.Marshal(e)
}

// DecodeResult parses a task result document.
func DecodeResult(b []byte, r *Result) error {
	return json.Unmarshal(b, r)
}
