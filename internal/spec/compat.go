package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Envelope versions (docs/COMPATIBILITY.md). An envelope's "v" is the
// lowest envelope version whose schema and meaning cover everything it
// asks for, so it is also the oldest worker that may serve it: a worker
// serves every version from MinEnvelopeVersion to EnvelopeVersion and
// refuses a newer one for good, naming the version it needs. Requests (what
// callers send) stay "v":1; only enqueuers choose an envelope's version.
//
// Workers of builds without EnvelopeVersion 2 serve version 1 only (their
// validation refuses any other "v") and announce nothing in Redis, which is
// how an enqueuer tells them apart.
const (
	MinEnvelopeVersion = 1
	// EnvelopeVersion is the newest envelope version this build's workers
	// serve. Version 2 adds options.fast_web_view; it is the first that
	// workers announce (internal/queue/fleet), so an enqueuer can keep an
	// envelope off workers that cannot serve it. Version 3 adds
	// source.site, options.lang, pdf_ua and pdf_a, and options.tagged
	// with source.chapters (which version 2 refuses). Version 4 adds
	// options.page (page.go). Bump it, and list the
	// new fields in addedIn, with every change of the envelope's fields or
	// meaning. Version 4 adds options.screenshot and options.page.
	// Version 5 adds page_secrets_ref.
	EnvelopeVersion = 5
)

// addedIn maps each envelope field added after version 1 (its JSON path,
// "[]" for the elements of an array) to the envelope version that
// introduced it. The enqueuer writes an envelope's "v" from it
// (Envelope.NeededVersion); TestEnvelopeFieldsHaveAVersion fails when a
// field of Envelope is neither a version-1 field nor listed here.
var addedIn = map[string]int{
	// A version-1 worker would refuse it as an unknown field, for good,
	// after the enqueuer stored the export's secrets: the gate refuses it
	// first.
	"options.fast_web_view": 2,
	// Only a worker that discovers chapters can serve a site; one of
	// version 2 would refuse it as an unknown field.
	"source.site":              3,
	"source.site.url":          3,
	"source.site.nav":          3,
	"source.site.include":      3,
	"source.site.exclude":      3,
	"source.site.max_chapters": 3,
	"source.site.revision":     3,
	"options.lang":             3,
	"options.pdf_ua":           3,
	"options.pdf_a":            3,
	// A worker of version 3 would refuse it as an unknown field.
	"options.screenshot":                     4,
	"options.screenshot.format":              4,
	"options.screenshot.width":               4,
	"options.screenshot.height":              4,
	"options.screenshot.clip":                4,
	"options.screenshot.selector":            4,
	"options.screenshot.quality":             4,
	"options.screenshot.optimize_for_speed":  4,
	"options.screenshot.omit_background":     4,
	"options.screenshot.device_scale_factor": 4,
	// A worker of version 3 would refuse the page options as unknown.
	"options.page":                                 4,
	"options.page.paper_width_in":                  4,
	"options.page.paper_height_in":                 4,
	"options.page.single_page":                     4,
	"options.page.omit_background":                 4,
	"options.page.user_agent":                      4,
	"options.page.media_features":                  4,
	"options.page.media_features[].name":           4,
	"options.page.media_features[].value":          4,
	"options.page.headers":                         4,
	"options.page.headers[].name":                  4,
	"options.page.headers[].value":                 4,
	"options.page.headers[].scope":                 4,
	"options.page.cookies":                         4,
	"options.page.cookies[].name":                  4,
	"options.page.cookies[].value":                 4,
	"options.page.cookies[].domain":                4,
	"options.page.cookies[].path":                  4,
	"options.page.cookies[].secure":                4,
	"options.page.cookies[].http_only":             4,
	"options.page.cookies[].same_site":             4,
	"options.page.fail_on_http_status":             4,
	"options.page.fail_on_resource_http_status":    4,
	"options.page.ignore_resource_domains":         4,
	"options.page.fail_on_resource_loading_failed": 4,
	"options.page.fail_on_console_exceptions":      4,
	// A worker of version 4 would refuse the reference as unknown.
	"page_secrets_ref":              5,
	"page_secrets_ref.id":           5,
	"page_secrets_ref.identity":     5,
	"page_secrets_ref.header_names": 5,
	"page_secrets_ref.cookie_names": 5,
}

// taggedManualVersion is the version that serves options.tagged with
// source.chapters: a change of meaning, no new field.
const taggedManualVersion = 3

// ErrNewerEnvelope is matched by the error of an envelope (or chapter task)
// of a newer version than this worker serves; it also matches ErrInvalid,
// so the task fails for good instead of being retried by a worker that can
// never serve it.
var ErrNewerEnvelope = errors.New("envelope needs a newer worker")

// versionError is the FieldError of an envelope this worker is too old for.
type versionError struct {
	FieldError
	Needs int
}

func (e *versionError) Is(target error) bool {
	return target == ErrNewerEnvelope || target == ErrInvalid
}

// Unwrap lets errors.As find the FieldError.
func (e *versionError) Unwrap() error { return &e.FieldError }

// NeededVersion is the lowest envelope version that defines every field e
// uses, and the field that needs it ("" when version 1 covers them all).
func (e Envelope) NeededVersion() (int, string) {
	b, err := json.Marshal(e)
	if err != nil {
		return MinEnvelopeVersion, ""
	}
	var doc any
	if json.Unmarshal(b, &doc) != nil {
		return MinEnvelopeVersion, ""
	}
	need, field := MinEnvelopeVersion, ""
	for _, p := range jsonPaths(doc, "") {
		if v := addedIn[p]; v > need {
			need, field = v, p
		}
	}
	if e.Options.Tagged && len(e.Source.Chapters) > 0 && taggedManualVersion > need {
		need, field = taggedManualVersion, "options.tagged"
	}
	return need, field
}

// jsonPaths lists the paths of every member of a decoded JSON document,
// array elements as "[]".
func jsonPaths(doc any, prefix string) []string {
	var out []string
	switch d := doc.(type) {
	case map[string]any:
		for k, v := range d {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, p)
			out = append(out, jsonPaths(v, p)...)
		}
	case []any:
		for _, v := range d {
			out = append(out, jsonPaths(v, prefix+"[]")...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkVersion refuses a payload of a newer envelope version than this
// worker serves before strict decoding would: the error then names the
// version it needs beside the first field this worker does not know (or
// "v" when it knows them all, a change of meaning), which is what an
// operator needs to see. A payload whose "v" is not a number is left to
// strict decoding.
func checkVersion(data []byte, v any) error {
	var head struct {
		V json.Number `json:"v"`
	}
	if json.Unmarshal(data, &head) != nil {
		return nil
	}
	n, err := head.V.Int64()
	if err != nil || n <= EnvelopeVersion {
		return nil
	}
	field := "v"
	var fe *FieldError
	if err := decodeStrict(bytes.NewReader(data), v); errors.As(err, &fe) && fe.Rule == "unknown field" {
		field = fe.Field
	}
	rule := fmt.Sprintf("envelope version %d needs a worker that serves it; this worker serves versions %d to %d (upgrade the workers first, docs/COMPATIBILITY.md)", n, MinEnvelopeVersion, EnvelopeVersion)
	if field != "v" {
		rule = "unknown field: " + rule
	}
	return &versionError{FieldError: FieldError{Field: field, Rule: rule}, Needs: int(n)}
}

// validateEnvelopeVersion is the "v" rule of envelopes and chapter tasks.
func validateEnvelopeVersion(v int) *FieldError {
	if v < MinEnvelopeVersion || v > EnvelopeVersion {
		return fieldErr("v", "must be an envelope version from %d to %d, got %d", MinEnvelopeVersion, EnvelopeVersion, v)
	}
	return nil
}

// NewerOutcome is what a worker reads from an envelope of a newer version
// than it serves (ErrNewerEnvelope), to finish the export it refuses: the
// fields of version 1 that the final record and the callback carry
// (manual_id, version, request_id, callback.url when its host is on
// hosts.Callbacks), read leniently. Nothing else: what the envelope stored
// beside the task is left to its TTL, since a worker does not act on
// records of a version it does not know.
func NewerOutcome(data []byte, hosts Hosts) Envelope {
	var head struct {
		ManualID  string    `json:"manual_id"`
		Version   string    `json:"version"`
		RequestID string    `json:"request_id"`
		Callback  *Callback `json:"callback"`
	}
	if len(data) > MaxPayloadBytes || json.Unmarshal(data, &head) != nil {
		return Envelope{}
	}
	e := Envelope{V: EnvelopeVersion}
	if validateIdentifier("manual_id", head.ManualID) == nil && validateIdentifier("version", head.Version) == nil {
		e.ManualID, e.Version = head.ManualID, head.Version
	}
	if len(head.RequestID) <= MaxRequestIDBytes && printable(head.RequestID) {
		e.RequestID = head.RequestID
	}
	if head.Callback != nil && head.Callback.validate(hosts.Callbacks) == nil {
		e.Callback = &Callback{URL: head.Callback.URL}
	}
	return e
}
