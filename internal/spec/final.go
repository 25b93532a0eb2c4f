package spec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	Retried   int     `json:"retried"` // attempts before the final one
}

// CallbackTaskType is the asynq task that delivers one callback.
const CallbackTaskType = "pdf:callback"

// CallbackTask is the payload of a pdf:callback task: the body is fixed
// when the export is final, so every attempt POSTs the same bytes under the
// same delivery id; only the signature's timestamp is fresh.
type CallbackTask struct {
	URL      string `json:"url"`
	Delivery string `json:"delivery"`
	Body     []byte `json:"body"` // the JSON of a Final
	// Traceparent and Tracestate are the W3C trace context of the export
	// that became final: the delivery's spans join its trace. Optional.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// Callback request headers.
const (
	SignatureHeader = "Pdfexport-Signature"
	DeliveryHeader  = "Pdfexport-Delivery"
)

// Signature errors callers branch on; all match ErrBadSignature.
var (
	ErrBadSignature = errors.New("callback signature invalid")
	ErrStale        = fmt.Errorf("%w: timestamp outside the tolerance", ErrBadSignature)
)

// SignCallback returns the Pdfexport-Signature value for body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>".
func SignCallback(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(callbackMAC(secret, ts, body))
}

func callbackMAC(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifyCallback checks a Pdfexport-Signature header against body: one of
// its v1 values must be the HMAC of "<t>." + body under secret (several v1
// values are accepted, so a sender can sign with an old and a new secret
// while they are rotated), and t must be within tolerance of now (replays
// of an old delivery are refused; tolerance <= 0 means 5 minutes).
func VerifyCallback(secret []byte, header string, body []byte, tolerance time.Duration, now time.Time) error {
	if len(secret) == 0 {
		return fmt.Errorf("%w: no secret to verify with", ErrBadSignature)
	}
	if tolerance <= 0 {
		tolerance = 5 * time.Minute
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: header must be t=<unix seconds>,v1=<hex>", ErrBadSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w (signed at %s, %s from now)", ErrStale, time.Unix(sec, 0).UTC().Format(time.RFC3339), d.Round(time.Second))
	}
	want := callbackMAC(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: no v1 signature matches the body", ErrBadSignature)
}
