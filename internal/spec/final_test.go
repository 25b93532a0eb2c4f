package spec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/pdfexport/pdfexport/internal/spec"

	"github.com/pdfexport/pdfexport/internal/egress"
)

func TestValidate_Callback(t *testing.T) {
	hooks := egress.MustParse("api.example.com,127.0.0.1:9999")
	tests := []struct {
		name     string
		callback *Callback
		hooks    egress.List
		want     string // "" accepts; else a word of the rule
	}{
		{"none", nil, egress.List{}, ""},
		{"allowed host", &Callback{URL: "https://api.example.com/hooks/pdf"}, hooks, ""},
		{"loopback named exactly", &Callback{URL: "http://127.0.0.1:9999/hook"}, hooks, ""},
		{"callbacks disabled", &Callback{URL: "https://api.example.com/hooks/pdf"}, egress.List{}, "CALLBACK_ALLOWED_HOSTS is empty"},
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

func TestVerifyCallback(t *testing.T) {
	secret := []byte("0123456789abcdef-secret")
	body := []byte(`{"task_id":"t1","state":"completed"}`)
	now := time.Unix(1_800_000_000, 0)
	sig := SignCallback(secret, now, body)
	old := SignCallback([]byte("the-previous-secret-value"), now, body)
	tests := []struct {
		name   string
		secret []byte
		header string
		body   []byte
		at     time.Time
		want   error // nil accepts
	}{
		{"valid", secret, sig, body, now, nil},
		{"valid within tolerance", secret, sig, body, now.Add(4 * time.Minute), nil},
		{"rotation: old and new signature", secret, old + "," + strings.Split(sig, ",")[1], body, now, nil},
		{"body changed", secret, sig, []byte(`{"task_id":"t1","state":"failed"}`), now, ErrBadSignature},
		{"wrong secret", []byte("another-secret-0000"), sig, body, now, ErrBadSignature},
		{"replayed later", secret, sig, body, now.Add(6 * time.Minute), ErrStale},
		{"from the future", secret, sig, body, now.Add(-6 * time.Minute), ErrStale},
		{"no timestamp", secret, strings.Split(sig, ",")[1], body, now, ErrBadSignature},
		{"no signature", secret, strings.Split(sig, ",")[0], body, now, ErrBadSignature},
		{"garbage", secret, "hello", body, now, ErrBadSignature},
		{"no secret", nil, sig, body, now, ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyCallback(tt.secret, tt.header, tt.body, 5*time.Minute, tt.at)
			if tt.want == nil && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if !strings.HasPrefix(sig, "t=1800000000,v1=") || len(sig) != len("t=1800000000,v1=")+64 {
		t.Errorf("signature header %q is not t=<unix>,v1=<64 hex>", sig)
	}
}
