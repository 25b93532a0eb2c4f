package exportclient

import (
	"net/http"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// VerifyCallback checks a callback delivery the Standard Webhooks way
// (standardwebhooks.com): header is the request's headers, body its raw
// body, secrets the workers' CALLBACK_SECRET entries ("whsec_<base64 key>";
// one argument may hold several, space- or comma-separated, as the variable
// does). It returns nil when webhook-timestamp is within five minutes of now
// and one v1 entry of webhook-signature is the HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<body>" under one of the keys, which
// refuses forged, altered and replayed deliveries and accepts either key
// while one rotates. Failures match ErrBadSignature, and ErrMissingHeaders,
// ErrStale or ErrNoMatchingSignature; a malformed secret is
// ErrInvalidSecret. Callbacks are delivered at least once: drop a
// webhook-id seen before.
func VerifyCallback(header http.Header, body []byte, secrets ...string) error {
	keys, err := spec.ParseCallbackSecrets(strings.Join(secrets, " "))
	if err != nil {
		return err
	}
	return spec.VerifyCallback(header, body, keys, spec.CallbackTolerance, time.Now())
}

// Callback headers (Standard Webhooks): webhook-id is the delivery id, the
// same on every attempt of one export's callback.
const (
	HeaderWebhookID        = spec.WebhookIDHeader
	HeaderWebhookTimestamp = spec.WebhookTimestampHeader
	HeaderWebhookSignature = spec.WebhookSignatureHeader
)

// VerifyCallback errors. ErrBadSignature matches every refusal of a
// delivery (answer 401); ErrMissingHeaders, ErrStale (webhook-timestamp
// more than five minutes from now) and ErrNoMatchingSignature say why.
// ErrInvalidSecret is a secret that is not whsec_<base64 key>: the
// receiver's configuration, not the delivery, is wrong.
var (
	ErrBadSignature        = spec.ErrBadSignature
	ErrMissingHeaders      = spec.ErrMissingHeaders
	ErrStale               = spec.ErrStale
	ErrNoMatchingSignature = spec.ErrNoMatchingSignature
	ErrInvalidSecret       = spec.ErrInvalidSecret
)
