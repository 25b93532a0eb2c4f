package callback

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Two CALLBACK_SECRET entries, as during a rotation: the old key and the new.
var (
	oldSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the-old-callback-key-24b"))
	newSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the-new-callback-key-32-bytes!!!"))
)

// referenceVerify verifies a received delivery with the Standard Webhooks
// reference library (one secret, its own clock and 5-minute tolerance).
func referenceVerify(t *testing.T, secret string, q received) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh.Verify(q.body, q.header)
}

// TestDeliver_StandardWebhooks: a real delivery, received by an HTTP server,
// carries webhook-id (the delivery id), webhook-timestamp and a
// webhook-signature the reference library accepts, and no Pdfexport-*
// header.
func TestDeliver_StandardWebhooks(t *testing.T) {
	r := newReceiver(t)
	d := webhookDeliverer(t, Config{Allowed: allowlist.MustParse(r.host())}, newSecret)
	defer d.Close()
	before := time.Now().Unix()
	if err := d.Post(context.Background(), outcome(t, r.srv.URL+"/hooks/pdf")); err != nil {
		t.Fatal(err)
	}
	reqs := r.got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	q := reqs[0]
	if err := referenceVerify(t, newSecret, q); err != nil {
		t.Fatalf("the reference library refuses the delivery: %v (headers %v)", err, q.header)
	}
	if id := q.header.Get("webhook-id"); id != "callback-t-1" {
		t.Errorf("webhook-id %q, want the delivery id callback-t-1", id)
	}
	if ts, err := strconv.ParseInt(q.header.Get("webhook-timestamp"), 10, 64); err != nil || ts < before || ts > time.Now().Unix() {
		t.Errorf("webhook-timestamp %q is not this attempt's unix seconds", q.header.Get("webhook-timestamp"))
	}
	for name := range q.header {
		if strings.HasPrefix(strings.ToLower(name), "pdfexport-") {
			t.Errorf("the delivery still carries %s", name)
		}
	}
}

// TestDeliver_RotatedSecrets: with two CALLBACK_SECRET entries the delivery
// has one v1 signature per key, and verifies with either key alone, so
// receivers can move to the new key before the old one is dropped.
func TestDeliver_RotatedSecrets(t *testing.T) {
	r := newReceiver(t)
	d := webhookDeliverer(t, Config{Allowed: allowlist.MustParse(r.host())}, oldSecret+" "+newSecret)
	defer d.Close()
	if err := d.Post(context.Background(), outcome(t, r.srv.URL+"/h")); err != nil {
		t.Fatal(err)
	}
	q := r.got()[0]
	if sigs := strings.Fields(q.header.Get("webhook-signature")); len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1,") || !strings.HasPrefix(sigs[1], "v1,") {
		t.Fatalf("webhook-signature %q, want two space-separated v1 entries", q.header.Get("webhook-signature"))
	}
	for _, s := range []string{oldSecret, newSecret} {
		if err := referenceVerify(t, s, q); err != nil {
			t.Errorf("the reference library with one of the keys: %v", err)
		}
	}
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-key-nobody-signed-with"))
	if err := referenceVerify(t, other, q); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("a third key: %v, want no matching signature", err)
	}
}

// TestDeliver_RetryKeepsIDFreshSignature: the attempt after a 500 carries
// the same webhook-id and body, a later webhook-timestamp and a different
// signature; both verify.
func TestDeliver_RetryKeepsIDFreshSignature(t *testing.T) {
	r := newReceiver(t, http.StatusInternalServerError)
	clock := time.Now().Add(-10 * time.Second)
	d := webhookDeliverer(t, Config{Allowed: allowlist.MustParse(r.host()),
		Now: func() time.Time { clock = clock.Add(5 * time.Second); return clock }}, newSecret)
	defer d.Close()
	tk := outcome(t, r.srv.URL+"/h")
	if err := d.Post(context.Background(), tk); err == nil {
		t.Fatal("the 500 was taken for a delivery")
	}
	if err := d.Post(context.Background(), tk); err != nil {
		t.Fatal(err)
	}
	reqs := r.got()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first, retry := reqs[0].header, reqs[1].header
	if first.Get("webhook-id") == "" || first.Get("webhook-id") != retry.Get("webhook-id") {
		t.Errorf("webhook-id %q then %q, want the same on every attempt", first.Get("webhook-id"), retry.Get("webhook-id"))
	}
	if !bytes.Equal(reqs[0].body, reqs[1].body) {
		t.Error("the body changed between attempts")
	}
	t1, _ := strconv.ParseInt(first.Get("webhook-timestamp"), 10, 64)
	t2, _ := strconv.ParseInt(retry.Get("webhook-timestamp"), 10, 64)
	if t2 <= t1 {
		t.Errorf("webhook-timestamp %d then %d, want a fresh one per attempt", t1, t2)
	}
	if first.Get("webhook-signature") == retry.Get("webhook-signature") {
		t.Error("the retry reused the first attempt's signature")
	}
	for i, q := range reqs {
		if err := referenceVerify(t, newSecret, q); err != nil {
			t.Errorf("attempt %d: %v", i+1, err)
		}
	}
}

// TestDeliver_TamperedOrStaleFails: one byte of the body changed, or a
// timestamp outside the five-minute tolerance, and the delivery no longer
// verifies.
func TestDeliver_TamperedOrStaleFails(t *testing.T) {
	r := newReceiver(t)
	d := webhookDeliverer(t, Config{Allowed: allowlist.MustParse(r.host())}, newSecret)
	defer d.Close()
	if err := d.Post(context.Background(), outcome(t, r.srv.URL+"/h")); err != nil {
		t.Fatal(err)
	}
	q := r.got()[0]
	tampered := q
	tampered.body = bytes.Clone(q.body)
	tampered.body[len(tampered.body)/2] ^= 0x01
	if err := referenceVerify(t, newSecret, tampered); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("body tampered by one byte: %v, want no matching signature", err)
	}

	late := newReceiver(t)
	stale := webhookDeliverer(t, Config{Allowed: allowlist.MustParse(late.host()),
		Now: func() time.Time { return time.Now().Add(-6 * time.Minute) }}, newSecret)
	defer stale.Close()
	if err := stale.Post(context.Background(), outcome(t, late.srv.URL+"/h")); err != nil {
		t.Fatal(err)
	}
	if err := referenceVerify(t, newSecret, late.got()[0]); !errors.Is(err, standardwebhooks.ErrMessageTooOld) {
		t.Errorf("timestamp 6 minutes old: %v, want too old", err)
	}
}

// webhookDeliverer is a Deliverer signing with CALLBACK_SECRET secrets.
func webhookDeliverer(t *testing.T, cfg Config, secrets string) *Deliverer {
	t.Helper()
	keys, err := spec.ParseCallbackSecrets(secrets)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keys = keys
	return deliverer(cfg)
}
