package spec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Final states of an export, the vocabulary of records, announcements,
// callbacks and status. An export in one of them never changes again.
const (
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCanceled  = "canceled"
)

// CanceledError is the error of an export canceled by request.
const CanceledError = "export canceled by request"

// Final is the outcome of an export once it is final: the body of its
// callback, and the announcement that wakes waiting clients.
type Final struct {
	TaskID    string  `json:"task_id"`
	State     string  `json:"state"` // completed | failed | canceled
	ManualID  string  `json:"manual_id,omitempty"`
	Version   string  `json:"version,omitempty"`
	RequestID string  `json:"request_id,omitempty"`
	Result    *Result `json:"result,omitempty"`
	Error     string  `json:"error,omitempty"`
	// Kind is what failed, for a caller that answers a failure by its kind
	// (one of the Failure constants); empty for an export that did not fail
	// or whose failure has no kind of its own.
	Kind string `json:"kind,omitempty"`
	// Detail is what a failure of its kind names, when the kind has any.
	Detail  *FailureDetail `json:"detail,omitempty"`
	Retried int            `json:"retried"` // attempts before the final one
}

// FailureDetail is what a failure of its kind names, for a caller that
// words the failure its own way (internal/gotenberg) instead of reading
// Final.Error. Only the fields of its kind are set.
type FailureDetail struct {
	// Check is the page option that failed a page_errors export (one of
	// the Failed* constants), Offenders its offenders, a line each.
	Check     string   `json:"check,omitempty"`
	Offenders []string `json:"offenders,omitempty"`
	// Status and StatusText are the main document's answer of an
	// http_status failure.
	Status     int    `json:"status,omitempty"`
	StatusText string `json:"status_text,omitempty"`
	// Selector is the selector of a no_element failure.
	Selector string `json:"selector,omitempty"`
}

// The kinds of a failed export (Final.Kind): what the worker's render or
// its checks refused, so that a caller maps a failure to its own answer
// without reading the error's text.
const (
	FailureTimeout    = "timeout"     // the render did not finish in time
	FailureBlocked    = "blocked"     // the page reached a host off ALLOWED_HOSTS
	FailureHTTPStatus = "http_status" // the main document answered >= 400
	FailurePageErrors = "page_errors" // the fail_on_* options refused the page
	FailurePageRanges = "page_ranges" // page_ranges select no page of the document
	FailureLimit      = "limit"       // the PDF grew past a size or page limit
	FailureNoElement  = "no_element"  // a screenshot's selector matched no visible element
)

// Callback request headers, the Standard Webhooks ones (standardwebhooks.com).
// webhook-id is the delivery id (the same on every attempt of one export's
// callback), webhook-timestamp the attempt's time in unix seconds, and
// webhook-signature one "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>"
// per key, space-separated.
const (
	WebhookIDHeader        = "webhook-id"
	WebhookTimestampHeader = "webhook-timestamp"
	WebhookSignatureHeader = "webhook-signature"
)

// CallbackTolerance is how far from now a webhook-timestamp may be, the
// convention's five minutes: older deliveries are refused as replays.
const CallbackTolerance = 5 * time.Minute

// secretPrefix starts every CALLBACK_SECRET entry.
const secretPrefix = "whsec_"

// minKeyBytes is the shortest key a CALLBACK_SECRET entry may decode to.
const minKeyBytes = 16

// Signature errors callers branch on; all match ErrBadSignature.
var (
	ErrBadSignature        = errors.New("callback signature invalid")
	ErrMissingHeaders      = fmt.Errorf("%w: webhook-id, webhook-timestamp and webhook-signature are required", ErrBadSignature)
	ErrStale               = fmt.Errorf("%w: timestamp outside the tolerance", ErrBadSignature)
	ErrNoMatchingSignature = fmt.Errorf("%w: no v1 signature matches the body", ErrBadSignature)
)

// ErrInvalidSecret: a secret is not a whsec_<base64 key> entry (at least 16
// bytes of key). It is the receiver's or the operator's mistake, not the
// sender's, so it does not match ErrBadSignature; its message never shows
// the value.
var ErrInvalidSecret = errors.New("callback secret invalid")

// ParseCallbackSecrets parses CALLBACK_SECRET: one or more entries
// "whsec_<base64 key>" separated by spaces or commas, so a key can be
// rotated without a gap (sign with both, then drop the old). The error
// (ErrInvalidSecret) names the entry by position, never by value.
func ParseCallbackSecrets(s string) ([][]byte, error) {
	return parseKeyList(s, ErrInvalidSecret, minKeyBytes)
}

// ErrInvalidSecretsKey: SECRETS_KEY is not a list of whsec_<base64 key>
// entries of at least SecretsKeyBytes bytes. Its message never shows the
// value.
var ErrInvalidSecretsKey = errors.New("secrets key invalid")

// SecretsKeyBytes is the shortest key a SECRETS_KEY entry may decode to:
// it seals with AES-256, whose strength is its 32 bytes of key.
const SecretsKeyBytes = 32

// ParseSecretsKey parses SECRETS_KEY, the keys sealing the secrets an
// enqueuer stores beside a task: CALLBACK_SECRET's form (so one rotation
// procedure serves both), the first entry sealing and every entry opening.
// The error (ErrInvalidSecretsKey) names the entry by position.
func ParseSecretsKey(s string) ([][]byte, error) {
	return parseKeyList(s, ErrInvalidSecretsKey, SecretsKeyBytes)
}

// parseKeyList reads "whsec_<base64 key>" entries separated by spaces or
// commas, each at least min bytes of key; its errors wrap invalid.
func parseKeyList(s string, invalid error, min int) ([][]byte, error) {
	entries := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: no whsec_<base64 key> entry", invalid)
	}
	keys := make([][]byte, 0, len(entries))
	for i, e := range entries {
		b64, ok := strings.CutPrefix(e, secretPrefix)
		if !ok {
			return nil, fmt.Errorf("%w: entry %d of %d does not start with %s (the form is whsec_<base64 key>)", invalid, i+1, len(entries), secretPrefix)
		}
		key, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d of %d is not whsec_ followed by standard base64", invalid, i+1, len(entries))
		}
		if len(key) < min {
			return nil, fmt.Errorf("%w: entry %d of %d decodes to %d bytes, want at least %d (e.g. whsec_$(openssl rand -base64 32))", invalid, i+1, len(entries), len(key), min)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// SignCallback returns the webhook-signature value of a delivery with
// webhook-id id, sent at t: one "v1,<base64 HMAC-SHA256(key,
// "<id>.<unix seconds>.<body>")>" per key, space-separated.
func SignCallback(keys [][]byte, id string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(callbackMAC(k, id, ts, body))
	}
	return strings.Join(sigs, " ")
}

// SetCallbackHeaders sets the three Standard Webhooks headers of a delivery
// sent at t on h.
func SetCallbackHeaders(h http.Header, keys [][]byte, id string, t time.Time, body []byte) {
	h.Set(WebhookIDHeader, id)
	h.Set(WebhookTimestampHeader, strconv.FormatInt(t.Unix(), 10))
	h.Set(WebhookSignatureHeader, SignCallback(keys, id, t, body))
}

func callbackMAC(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifyCallback checks a delivery the Standard Webhooks way: h must carry
// webhook-id, webhook-timestamp within tolerance of now (tolerance <= 0:
// CallbackTolerance) and a webhook-signature of which one v1 entry is the
// HMAC of "<id>.<timestamp>.<body>" under one of keys. Each key is tried, so
// a receiver holding an old and a new key accepts deliveries signed with
// either while they rotate. Failures match ErrBadSignature (and
// ErrMissingHeaders, ErrStale or ErrNoMatchingSignature).
func VerifyCallback(h http.Header, body []byte, keys [][]byte, tolerance time.Duration, now time.Time) error {
	if len(keys) == 0 {
		return fmt.Errorf("%w: no key to verify with", ErrInvalidSecret)
	}
	if tolerance <= 0 {
		tolerance = CallbackTolerance
	}
	id, ts, header := h.Get(WebhookIDHeader), h.Get(WebhookTimestampHeader), h.Get(WebhookSignatureHeader)
	if id == "" || ts == "" || header == "" {
		return ErrMissingHeaders
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp must be unix seconds", ErrBadSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w (signed at %s, %s from now)", ErrStale, time.Unix(sec, 0).UTC().Format(time.RFC3339), d.Round(time.Second))
	}
	var sigs [][]byte
	for _, entry := range strings.Fields(header) {
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(sig); err == nil {
			sigs = append(sigs, b)
		}
	}
	for _, k := range keys {
		want := callbackMAC(k, id, ts, body)
		for _, s := range sigs {
			if hmac.Equal(s, want) {
				return nil
			}
		}
	}
	return ErrNoMatchingSignature
}
