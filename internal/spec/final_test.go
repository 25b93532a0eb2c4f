package spec_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/pdfexport/pdfexport/internal/spec"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

func TestValidate_Callback(t *testing.T) {
	hooks := allowlist.MustParse("api.example.com,127.0.0.1:9999")
	tests := []struct {
		name     string
		callback *Callback
		hooks    allowlist.List
		want     string // "" accepts; else a word of the rule
	}{
		{"none", nil, allowlist.List{}, ""},
		{"allowed host", &Callback{URL: "https://api.example.com/hooks/pdf"}, hooks, ""},
		{"loopback named exactly", &Callback{URL: "http://127.0.0.1:9999/hook"}, hooks, ""},
		{"callbacks disabled", &Callback{URL: "https://api.example.com/hooks/pdf"}, allowlist.List{}, "CALLBACK_ALLOWED_HOSTS is empty"},
		{"host off the list", &Callback{URL: "https://evil.example.net/x"}, hooks, "not on CALLBACK_ALLOWED_HOSTS"},
		{"metadata address", &Callback{URL: "http://169.254.169.254/latest"}, hooks, "special-purpose address"},
		{"loopback on another port", &Callback{URL: "http://127.0.0.1:22/"}, hooks, "special-purpose address"},
		{"scheme", &Callback{URL: "ftp://api.example.com/x"}, hooks, "scheme"},
		{"credentials", &Callback{URL: "https://u:p@api.example.com/x"}, hooks, "credentials"},
		{"empty url", &Callback{}, hooks, "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPayload()
			p.Callback = tt.callback
			err := p.Validate(Hosts{Sources: testAllowed, Callbacks: tt.hooks})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			case tt.want != "" && FirstField(err) != "callback.url":
				t.Errorf("field = %q, want callback.url", FirstField(err))
			}
		})
	}
}

// TestArtifactKey_IgnoresWhatDoesNotChangeThePDF: a callback, the
// fail_on options and the trace context do not change the artifact key (the same document is not
// rendered twice for them).
func TestArtifactKey_IgnoresWhatDoesNotChangeThePDF(t *testing.T) {
	p := validPayload()
	for name, change := range map[string]func(*Envelope){
		"callback":                func(q *Envelope) { q.Callback = &Callback{URL: "https://api.example.com/hooks/pdf"} },
		"fail_on_resource_errors": func(q *Envelope) { q.Options.FailOnResourceErrors = true },
		"fail_on_console_errors":  func(q *Envelope) { q.Options.FailOnConsoleErrors = true },
		"traceparent":             func(q *Envelope) { q.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
		"tracestate": func(q *Envelope) {
			q.Traceparent, q.Tracestate = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", "congo=t61rcWkgMzE"
		},
	} {
		q := p
		change(&q)
		if p.ArtifactKey() != q.ArtifactKey() {
			t.Errorf("%s changed the artifact key", name)
		}
		if err := q.Validate(Hosts{Sources: testAllowed}); strings.HasPrefix(name, "trace") && err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if strings.HasPrefix(name, "fail_on") && q.Options.Settings().FailOn == (FailOn{}) {
			t.Errorf("%s did not reach the print settings", name)
		}
	}
}

// key16 and key24 are CALLBACK_SECRET entries of a 16- and a 24-byte key.
var (
	key16 = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	key24 = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the-previous-secret-key!"))
)

func TestParseCallbackSecrets(t *testing.T) {
	for _, tt := range []struct {
		in   string
		keys int    // 0: refused
		want string // a word of the refusal
	}{
		{key16, 1, ""},
		{key24 + " " + key16, 2, ""},
		{key24 + "," + key16, 2, ""},
		{" " + key24 + " ,\n" + key16 + " ", 2, ""},
		{"", 0, "no whsec_"},
		{" , ", 0, "no whsec_"},
		{"0123456789abcdef0123", 0, "entry 1 of 1 does not start with whsec_"},
		{key16 + " whsec_not*base64", 0, "entry 2 of 2 is not whsec_ followed by standard base64"},
		{"whsec_" + base64.StdEncoding.EncodeToString([]byte("short")), 0, "decodes to 5 bytes"},
	} {
		keys, err := ParseCallbackSecrets(tt.in)
		switch {
		case tt.keys > 0 && (err != nil || len(keys) != tt.keys):
			t.Errorf("%q: %d keys, %v; want %d", tt.in, len(keys), err, tt.keys)
		case tt.keys == 0 && (!errors.Is(err, ErrInvalidSecret) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want ErrInvalidSecret saying %q", tt.in, err, tt.want)
		case tt.keys == 0 && strings.Contains(err.Error(), "not*base64"):
			t.Errorf("%q: the error shows the value: %v", tt.in, err)
		}
	}
}

// TestParseSecretsKey: SECRETS_KEY takes CALLBACK_SECRET's form, but each
// key is at least 32 bytes (AES-256), and its errors are its own.
func TestParseSecretsKey(t *testing.T) {
	key32 := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for _, tt := range []struct {
		in   string
		keys int    // 0: refused
		want string // a word of the refusal
	}{
		{key32, 1, ""},
		{key32 + "," + key32, 2, ""},
		{"", 0, "no whsec_"},
		{key24, 0, "entry 1 of 1 decodes to 24 bytes, want at least 32"},
		{key32 + " whsec_not*base64", 0, "entry 2 of 2 is not whsec_ followed by standard base64"},
	} {
		keys, err := ParseSecretsKey(tt.in)
		switch {
		case tt.keys > 0 && (err != nil || len(keys) != tt.keys):
			t.Errorf("%q: %d keys, %v; want %d", tt.in, len(keys), err, tt.keys)
		case tt.keys == 0 && (!errors.Is(err, ErrInvalidSecretsKey) || errors.Is(err, ErrInvalidSecret) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want ErrInvalidSecretsKey saying %q", tt.in, err, tt.want)
		}
	}
}

func TestVerifyCallback(t *testing.T) {
	keys := mustKeys(t, key16)
	old := mustKeys(t, key24)
	body := []byte(`{"task_id":"t1","state":"completed"}`)
	now := time.Unix(1_800_000_000, 0)
	headers := func(keys [][]byte, id string, at time.Time, edit func(http.Header)) http.Header {
		h := http.Header{}
		SetCallbackHeaders(h, keys, id, at, body)
		if edit != nil {
			edit(h)
		}
		return h
	}
	both := append(append([][]byte{}, old...), keys...)
	tests := []struct {
		name   string
		keys   [][]byte
		header http.Header
		body   []byte
		at     time.Time
		want   error // nil accepts
	}{
		{"valid", keys, headers(keys, "callback-t1", now, nil), body, now, nil},
		{"valid within tolerance", keys, headers(keys, "callback-t1", now, nil), body, now.Add(4 * time.Minute), nil},
		{"signed with both, verified with the new", keys, headers(both, "callback-t1", now, nil), body, now, nil},
		{"signed with the new, verified with both", both, headers(keys, "callback-t1", now, nil), body, now, nil},
		{"body changed", keys, headers(keys, "callback-t1", now, nil), []byte(`{"task_id":"t1","state":"failed"}`), now, ErrNoMatchingSignature},
		{"id changed", keys, headers(keys, "callback-t1", now, func(h http.Header) { h.Set(WebhookIDHeader, "callback-t2") }), body, now, ErrNoMatchingSignature},
		{"timestamp changed", keys, headers(keys, "callback-t1", now, func(h http.Header) { h.Set(WebhookTimestampHeader, "1800000001") }), body, now, ErrNoMatchingSignature},
		{"wrong key", old, headers(keys, "callback-t1", now, nil), body, now, ErrNoMatchingSignature},
		{"replayed later", keys, headers(keys, "callback-t1", now, nil), body, now.Add(6 * time.Minute), ErrStale},
		{"from the future", keys, headers(keys, "callback-t1", now, nil), body, now.Add(-6 * time.Minute), ErrStale},
		{"no id", keys, headers(keys, "callback-t1", now, func(h http.Header) { h.Del(WebhookIDHeader) }), body, now, ErrMissingHeaders},
		{"no timestamp", keys, headers(keys, "callback-t1", now, func(h http.Header) { h.Del(WebhookTimestampHeader) }), body, now, ErrMissingHeaders},
		{"no signature", keys, headers(keys, "callback-t1", now, func(h http.Header) { h.Del(WebhookSignatureHeader) }), body, now, ErrMissingHeaders},
		{"timestamp not a number", keys, headers(keys, "callback-t1", now, func(h http.Header) { h.Set(WebhookTimestampHeader, "soon") }), body, now, ErrBadSignature},
		{"v2 only", keys, headers(keys, "callback-t1", now, func(h http.Header) {
			h.Set(WebhookSignatureHeader, strings.Replace(h.Get(WebhookSignatureHeader), "v1,", "v2,", 1))
		}), body, now, ErrNoMatchingSignature},
		{"garbage", keys, headers(keys, "callback-t1", now, func(h http.Header) { h.Set(WebhookSignatureHeader, "hello") }), body, now, ErrNoMatchingSignature},
		{"no key", nil, headers(keys, "callback-t1", now, nil), body, now, ErrInvalidSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyCallback(tt.header, tt.body, tt.keys, CallbackTolerance, tt.at)
			if tt.want == nil && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	sig := SignCallback(both, "callback-t1", now, body)
	if parts := strings.Split(sig, " "); len(parts) != 2 || !strings.HasPrefix(parts[0], "v1,") || len(parts[1]) != len("v1,")+44 {
		t.Errorf("webhook-signature %q is not two space-separated v1,<base64 of 32 bytes>", sig)
	}
}

// TestVerifyCallback_AgreesWithTheReferenceLibrary: what the Standard
// Webhooks Go library signs, VerifyCallback accepts, and the other way
// round, with the convention's own test vector too.
func TestVerifyCallback_AgreesWithTheReferenceLibrary(t *testing.T) {
	const refSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the specification's example key
	wh, err := standardwebhooks.NewWebhook(refSecret)
	if err != nil {
		t.Fatal(err)
	}
	keys := mustKeys(t, refSecret)
	body := []byte(`{"type":"example.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"success":true}}`)
	id := "msg_p5jXN8AQM9LWM0D4loKWxJek"
	at := time.Unix(1_614_265_330, 0)

	refSig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	if ours := SignCallback(keys, id, at, body); ours != refSig {
		t.Fatalf("SignCallback = %q, the reference library signs %q", ours, refSig)
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, refSig)
	if err := VerifyCallback(h, body, keys, 0, at); err != nil {
		t.Fatalf("the reference library's signature: %v", err)
	}

	now := time.Now()
	ours := http.Header{}
	SetCallbackHeaders(ours, keys, "callback-t1", now, body)
	if err := wh.Verify(body, ours); err != nil {
		t.Fatalf("the reference library refuses our signature: %v", err)
	}
	if err := wh.Verify(append([]byte{'x'}, body...), ours); err == nil {
		t.Fatal("the reference library accepts a changed body")
	}
}

func mustKeys(t *testing.T, secrets string) [][]byte {
	t.Helper()
	keys, err := ParseCallbackSecrets(secrets)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
