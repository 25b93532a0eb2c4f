package exportclient_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/pdfexport/pdfexport/exportclient"
)

// TestVerifyCallback_ReferenceSigned: deliveries signed by the Standard
// Webhooks reference library verify; each failure matches its sentinel and
// ErrBadSignature; a malformed secret is ErrInvalidSecret, never shown.
func TestVerifyCallback_ReferenceSigned(t *testing.T) {
	oldKey := "whsec_" + base64.StdEncoding.EncodeToString([]byte("an-old-key-of-24-bytes!!"))
	newKey := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-new-key-of-32-bytes-0123456789"))
	body := []byte(`{"task_id":"t1","state":"completed","retried":0}`)
	signed := func(secret string, at time.Time, edit func(http.Header)) http.Header {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign("callback-t1", at, body)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set("webhook-id", "callback-t1")
		h.Set("webhook-timestamp", strconv.FormatInt(at.Unix(), 10))
		h.Set("webhook-signature", sig)
		if edit != nil {
			edit(h)
		}
		return h
	}
	now := time.Now()
	tampered := append([]byte(nil), body...)
	tampered[10] ^= 1
	for _, tt := range []struct {
		name    string
		header  http.Header
		body    []byte
		secrets []string
		want    error
	}{
		{"valid", signed(newKey, now, nil), body, []string{newKey}, nil},
		{"rotation: both keys in one value", signed(oldKey, now, nil), body, []string{oldKey + "," + newKey}, nil},
		{"rotation: both keys as arguments", signed(newKey, now, nil), body, []string{oldKey, newKey}, nil},
		{"tampered by one byte", signed(newKey, now, nil), tampered, []string{newKey}, exportclient.ErrNoMatchingSignature},
		{"other key", signed(oldKey, now, nil), body, []string{newKey}, exportclient.ErrNoMatchingSignature},
		{"six minutes old", signed(newKey, now.Add(-6*time.Minute), nil), body, []string{newKey}, exportclient.ErrStale},
		{"no webhook-id", signed(newKey, now, func(h http.Header) { h.Del("webhook-id") }), body, []string{newKey}, exportclient.ErrMissingHeaders},
		{"malformed secret", signed(newKey, now, nil), body, []string{"whsec_?SECRET-VALUE?"}, exportclient.ErrInvalidSecret},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := exportclient.VerifyCallback(tt.header, tt.body, tt.secrets...)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if bad := errors.Is(err, exportclient.ErrBadSignature); bad == (tt.want == exportclient.ErrInvalidSecret) {
				t.Errorf("errors.Is(err, ErrBadSignature) = %v for %v", bad, err)
			}
			if strings.Contains(err.Error(), "SECRET-VALUE") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}
