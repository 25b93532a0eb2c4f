package spec_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/pdfexport/pdfexport/internal/spec"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

func TestValidate_Credentials(t *testing.T) {
	hosts := Hosts{Sources: allowlist.MustParse("docs.example.com")}
	const page = "https://docs.example.com/"
	creds := func(h map[string]string, c ...Cookie) Credentials { return Credentials{Headers: h, Cookies: c} }
	requests := []struct {
		name      string
		src       RequestSource
		wantField string
	}{
		{"header and cookie", RequestSource{URL: page, Credentials: creds(map[string]string{"Authorization": "Bearer t"}, Cookie{Name: "sid", Value: "v", Path: "/docs"})}, ""},
		{"html source", RequestSource{HTML: "<p>x", Credentials: creds(map[string]string{"A": "b"})}, "source.headers"},
		{"site source", RequestSource{Site: &Site{URL: page}, Credentials: creds(map[string]string{"A": "b"})}, "source.headers"},
		{"chapters source", RequestSource{Chapters: []Chapter{{URL: page}}, Credentials: creds(nil, Cookie{Name: "sid", Value: "v"})}, "source.headers"},
		{"header name", RequestSource{URL: page, Credentials: creds(map[string]string{"Bad Name": "v"})}, "source.headers"},
		{"same header twice", RequestSource{URL: page, Credentials: creds(map[string]string{"x-token": "a", "X-Token": "b"})}, "source.headers"},
		{"hop-by-hop", RequestSource{URL: page, Credentials: creds(map[string]string{"connection": "v"})}, "source.headers"},
		{"empty value", RequestSource{URL: page, Credentials: creds(map[string]string{"A": ""})}, "source.headers"},
		{"cookie value", RequestSource{URL: page, Credentials: creds(nil, Cookie{Name: "sid", Value: "a;b"})}, "source.cookies[0]"},
		{"cookie twice", RequestSource{URL: page, Credentials: creds(nil, Cookie{Name: "sid", Value: "a"}, Cookie{Name: "sid", Value: "b"})}, "source.cookies[1]"},
		{"too large", RequestSource{URL: page, Credentials: creds(map[string]string{"A": strings.Repeat("x", MaxCredentialBytes)})}, "source.headers"},
	}
	for _, tc := range requests {
		t.Run("request/"+tc.name, func(t *testing.T) {
			r := Request{V: 1, ManualID: "m", Version: "1", Source: tc.src}
			if got := FirstField(r.Validate(hosts)); got != tc.wantField {
				t.Fatalf("field %q (%v), want %q", got, r.Validate(hosts), tc.wantField)
			}
		})
	}
	ref := &CredentialsRef{ID: "x", Identity: strings.Repeat("ab", 32)}
	envelopes := []struct {
		name      string
		src       EnvelopeSource
		wantField string
	}{
		{"reference", EnvelopeSource{URL: page, Credentials: ref}, ""},
		{"reference with an html source", EnvelopeSource{HTML: "<p>x", Credentials: ref}, "source.credentials_ref"},
		{"bad identity", EnvelopeSource{URL: page, Credentials: &CredentialsRef{ID: "x", Identity: "short"}}, "source.credentials_ref"},
	}
	for _, tc := range envelopes {
		t.Run("envelope/"+tc.name, func(t *testing.T) {
			e := Envelope{V: 1, ManualID: "m", Version: "1", Source: tc.src}
			if got := FirstField(e.Validate(hosts)); got != tc.wantField {
				t.Fatalf("field %q (%v), want %q", got, e.Validate(hosts), tc.wantField)
			}
		})
	}
}

// TestDecodeRequest_RefusesEnvelopeOnlyFields: a caller cannot name data
// stored beside another export, nor write the trace context fields of an
// envelope; the error names the field.
func TestDecodeRequest_RefusesEnvelopeOnlyFields(t *testing.T) {
	id := strings.Repeat("ab", 32)
	for _, tc := range []struct{ name, body, field string }{
		{"credentials_ref", `{"v":1,"manual_id":"m","version":"1","source":{"url":"https://docs.example.com/","credentials_ref":{"id":"victim","identity":"` + id + `"}}}`, "source.credentials_ref"},
		{"html_ref", `{"v":1,"manual_id":"m","version":"1","source":{"html_ref":{"sha256":"` + id + `","bytes":10}}}`, "source.html_ref"},
		{"traceparent", `{"v":1,"manual_id":"m","version":"1","source":{"html":"x"},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`, "traceparent"},
		{"tracestate", `{"v":1,"manual_id":"m","version":"1","source":{"html":"x"},"tracestate":"a=b"}`, "tracestate"},
		{"client", `{"v":1,"manual_id":"m","version":"1","source":{"html":"x"},"client":"portal"}`, "client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tc.body))
			if !errors.Is(err, ErrEnvelopeOnly) || !errors.Is(err, ErrInvalid) || FirstField(err) != tc.field {
				t.Fatalf("err %v (field %q), want an envelope-only error naming %s", err, FirstField(err), tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("message %q does not name %s", err, tc.field)
			}
		})
	}
	// The same envelopes decode as envelopes: only the enqueuer's side
	// accepts them.
	if _, err := DecodeEnvelope([]byte(`{"v":1,"manual_id":"m","version":"1","source":{"url":"https://docs.example.com/","credentials_ref":{"id":"x","identity":"` + id + `"}}}`)); err != nil {
		t.Fatalf("envelope: %v", err)
	}
}

// TestDecodeEnvelope_RefusesRawCredentials: secrets never travel in a
// queued payload.
func TestDecodeEnvelope_RefusesRawCredentials(t *testing.T) {
	_, err := DecodeEnvelope([]byte(`{"v":1,"manual_id":"m","version":"1","source":{"url":"https://docs.example.com/","headers":{"Authorization":"Bearer t"}}}`))
	if FirstField(err) != "source.headers" || !strings.Contains(err.Error(), "beside the task") {
		t.Fatalf("err %v", err)
	}
	if _, err := DecodeRequest([]byte(`{"v":1,"manual_id":"m","version":"1","source":{"url":"https://docs.example.com/","headers":{"Authorization":"Bearer t"},"cookies":[{"name":"sid","value":"v"}]}}`)); err != nil {
		t.Fatalf("request: %v", err)
	}
}

// TestCredentials_IdentityIgnoresOrderAndCase: one identity for the same
// credentials however they are spelled.
func TestCredentials_IdentityIgnoresOrderAndCase(t *testing.T) {
	a := Credentials{Headers: map[string]string{"authorization": "Bearer t", "X-A": "1"}, Cookies: []Cookie{{Name: "b", Value: "2"}, {Name: "a", Value: "1", Path: "/"}}}
	b := Credentials{Headers: map[string]string{"X-a": "1", "Authorization": "Bearer t"}, Cookies: []Cookie{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}}
	if string(a.IdentityBytes()) != string(b.IdentityBytes()) {
		t.Fatalf("%s != %s", a.IdentityBytes(), b.IdentityBytes())
	}
	c := b
	c.Headers = map[string]string{"X-a": "1", "Authorization": "Bearer u"}
	if string(a.IdentityBytes()) == string(c.IdentityBytes()) {
		t.Fatal("other credentials, same identity")
	}
}

// TestArtifactKey_CredentialsAreIdentity: the same page under other
// credentials is another artifact; the key names only the identity.
func TestArtifactKey_CredentialsAreIdentity(t *testing.T) {
	base := Envelope{V: 1, ManualID: "m", Version: "1", Source: EnvelopeSource{URL: "https://docs.example.com/"}}
	withRef := func(identity string) Envelope {
		p := base
		p.Source.Credentials = &CredentialsRef{ID: "any", Identity: identity}
		return p
	}
	a, b := withRef(strings.Repeat("a", 64)), withRef(strings.Repeat("b", 64))
	sameUserOtherTask := a
	sameUserOtherTask.Source.Credentials = &CredentialsRef{ID: "other", Identity: strings.Repeat("a", 64), HeaderNames: []string{"Authorization"}}
	if base.ArtifactKey() == a.ArtifactKey() || a.ArtifactKey() == b.ArtifactKey() {
		t.Errorf("keys: public %s, a %s, b %s", base.ArtifactKey(), a.ArtifactKey(), b.ArtifactKey())
	}
	if a.ArtifactKey() != sameUserOtherTask.ArtifactKey() {
		t.Error("the reference's id or names changed the key")
	}
}
