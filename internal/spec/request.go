package spec

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Request is what a caller sends to export a manual version: the body of
// POST /v1/exports, exportclient's raw payload, what bin/enqueue builds from
// its flags. It carries the caller's secrets (per-export credentials) in the
// clear; an enqueuer turns it into an Envelope, which carries none.
type Request struct {
	V         int           `json:"v"`
	ManualID  string        `json:"manual_id"`
	Version   string        `json:"version"`
	Source    RequestSource `json:"source"`
	Options   Options       `json:"options,omitzero"`
	Force     bool          `json:"force,omitempty"`
	RequestID string        `json:"request_id,omitempty"`
	Callback  *Callback     `json:"callback,omitempty"`
}

// RequestSource is what to print: a URL on ALLOWED_HOSTS (with, optionally,
// per-export credentials for its origin), an inline HTML document, or the
// chapters of a manual. Exactly one of URL, HTML and Chapters is set.
type RequestSource struct {
	URL  string `json:"url,omitempty"`
	HTML string `json:"html,omitempty"`
	// Chapters make the export a manual of many pages (chapters.go).
	Chapters []Chapter `json:"chapters,omitempty"`
	// Site makes the export a manual of the chapters a docs site's
	// navigation lists (site.go).
	Site *Site `json:"site,omitempty"`
	// Credentials (source.headers, source.cookies) render URL as one of
	// the caller's users.
	Credentials
}

// envelopeOnly are the fields only an enqueuer writes, by the JSON name a
// decoder reports for them, with the field's path.
var envelopeOnly = map[string]string{
	"credentials_ref":  "source.credentials_ref",
	"html_ref":         "source.html_ref",
	"traceparent":      "traceparent",
	"tracestate":       "tracestate",
	"encryption_ref":   "encryption_ref",
	"page_secrets_ref": "page_secrets_ref",
	"client":           "client",
}

// ErrEnvelopeOnly is matched by the FieldError of a request that names a
// field only an enqueuer writes.
var ErrEnvelopeOnly = errors.New("field is written by the enqueuer, not by callers")

// envelopeOnlyError is the FieldError of an envelope-only field.
type envelopeOnlyError struct{ FieldError }

func (e *envelopeOnlyError) Is(target error) bool {
	return target == ErrEnvelopeOnly || target == ErrInvalid
}

// Unwrap lets errors.As find the FieldError.
func (e *envelopeOnlyError) Unwrap() error { return &e.FieldError }

func envelopeOnlyErr(field string) error {
	rule := "envelope-only: the enqueuer writes it, a request may not"
	switch field {
	case "source.credentials_ref":
		rule += "; send the credentials themselves in source.headers and source.cookies (they are stored beside the export, owned by it)"
	case "page_secrets_ref":
		rule += "; send the headers and cookies themselves in options.page (they are stored beside the export, owned by it)"
	case "encryption_ref":
		rule += "; send the passwords in options.encryption (they are stored beside the export, owned by it)"
	case "source.html_ref":
		rule += "; send the document in source.html (a large one is stored beside the export, owned by it)"
	case "client":
		rule += "; the HTTP API records the client whose bearer token enqueued the export"
	default:
		rule += "; send the trace context as the traceparent/tracestate HTTP headers, or in the context of exportclient's Enqueue"
	}
	return &envelopeOnlyError{FieldError{Field: field, Rule: rule}}
}

// DecodeRequest parses a request strictly, like DecodeEnvelope: unknown
// fields, wrong types, trailing data and bodies over MaxPayloadBytes are
// refused with a FieldError naming the field. A field only an envelope
// carries (source.credentials_ref, source.html_ref, traceparent,
// tracestate, encryption_ref, page_secrets_ref, client) is refused with an error that also matches ErrEnvelopeOnly.
// It does not validate values; call Validate for that.
func DecodeRequest(data []byte) (Request, error) {
	if len(data) > MaxPayloadBytes {
		return Request{}, fieldErr("payload", "larger than %d bytes", MaxPayloadBytes)
	}
	var r Request
	if err := decodeStrict(bytes.NewReader(data), &r); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			if path, ok := envelopeOnly[fe.Field]; ok && fe.Rule == "unknown field" {
				return Request{}, envelopeOnlyErr(path)
			}
		}
		return Request{}, err
	}
	return r, nil
}

// Encode marshals a request. It does not validate.
func (r Request) Encode() ([]byte, error) { return json.Marshal(r) }

// Validate checks every rule of the v1 contract and returns all violations
// joined; each is a *FieldError naming the field and the rule, and all match
// ErrInvalid.
func (r Request) Validate(hosts Hosts) error {
	errs := r.common().validate(hosts)
	if r.V != PayloadVersion {
		errs = append(errs, fieldErr("v", "must be %d (payload schema version), got %d", PayloadVersion, r.V))
	}
	errs = append(errs, validateSource(r.Source.URL, r.Source.HTML, nil, r.Source.Chapters, r.Source.Site, hosts.Sources)...)
	errs = append(errs, r.Source.Credentials.validate(r.Source.URL)...)
	errs = append(errs, r.Options.validateManual(r.Source.Chapters != nil || r.Source.Site != nil)...)
	errs = append(errs, r.Options.validateDocument(false)...)
	errs = append(errs, r.Options.validateScreenshot(r.Source.Chapters != nil || r.Source.Site != nil)...)
	return errors.Join(errs...)
}

// Envelope is the request's envelope before the enqueuer adds what it
// stores beside the task and the trace context: every field but the
// secrets (the credentials, the encryption's passwords), which the enqueuer
// replaces with their references. r is not changed.
func (r Request) Envelope() Envelope {
	opts := r.Options
	if e := opts.Encryption; e != nil {
		opts.Encryption = &Encryption{Allow: e.Allow}
	}
	return Envelope{V: r.V, ManualID: r.ManualID, Version: r.Version,
		Source:  EnvelopeSource{URL: r.Source.URL, HTML: r.Source.HTML, Chapters: r.Source.Chapters, Site: r.Source.Site},
		Options: opts, Force: r.Force, RequestID: r.RequestID, Callback: r.Callback}
}

// ArtifactKey is the key of the artifact the request names when it has no
// per-export credentials or passwords; with them the key depends on their keyed identity,
// which only the enqueuer can compute (Envelope.ArtifactKey after it stored
// them), so this key is one no other request shares.
func (r Request) ArtifactKey() string {
	e := r.Envelope()
	if !r.Source.Credentials.Empty() || r.Options.Encryption != nil || !r.Options.Page.Secrets().Empty() {
		return e.artifactKey("unstored", "unstored")
	}
	return e.ArtifactKey()
}

// common are the fields requests and envelopes share.
type common struct {
	V         int
	ManualID  string
	Version   string
	Options   Options
	RequestID string
	Callback  *Callback
}

func (r Request) common() common {
	return common{r.V, r.ManualID, r.Version, r.Options, r.RequestID, r.Callback}
}

func (e Envelope) common() common {
	return common{e.V, e.ManualID, e.Version, e.Options, e.RequestID, e.Callback}
}
