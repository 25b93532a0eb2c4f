package spec

import (
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/allowlist"
)

func TestValidate_Credentials(t *testing.T) {
	hosts := Hosts{Sources: allowlist.MustParse("docs.example.com")}
	ref := &CredentialsRef{ID: "x", Identity: strings.Repeat("ab", 32)}
	tests := []struct {
		name      string
		src       Source
		wantField string
	}{
		{"header and cookie", Source{URL: "https://docs.example.com/", Headers: map[string]string{"Authorization": "Bearer t"}, Cookies: []Cookie{{Name: "sid", Value: "v", Path: "/docs"}}}, ""},
		{"reference", Source{URL: "https://docs.example.com/", Credentials: ref}, ""},
		{"html source", Source{HTML: "<p>x", Headers: map[string]string{"A": "b"}}, "source.headers"},
		{"both forms", Source{URL: "https://docs.example.com/", Headers: map[string]string{"A": "b"}, Credentials: ref}, "source.credentials_ref"},
		{"bad identity", Source{URL: "https://docs.example.com/", Credentials: &CredentialsRef{ID: "x", Identity: "short"}}, "source.credentials_ref"},
		{"header name", Source{URL: "https://docs.example.com/", Headers: map[string]string{"Bad Name": "v"}}, "source.headers"},
		{"hop-by-hop", Source{URL: "https://docs.example.com/", Headers: map[string]string{"connection": "v"}}, "source.headers"},
		{"empty value", Source{URL: "https://docs.example.com/", Headers: map[string]string{"A": ""}}, "source.headers"},
		{"cookie value", Source{URL: "https://docs.example.com/", Cookies: []Cookie{{Name: "sid", Value: "a;b"}}}, "source.cookies[0]"},
		{"cookie twice", Source{URL: "https://docs.example.com/", Cookies: []Cookie{{Name: "sid", Value: "a"}, {Name: "sid", Value: "b"}}}, "source.cookies[1]"},
		{"too large", Source{URL: "https://docs.example.com/", Headers: map[string]string{"A": strings.Repeat("x", MaxCredentialBytes)}}, "source.headers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Payload{V: 1, ManualID: "m", Version: "1", Source: tc.src}
			err := p.Validate(hosts)
			if got := FirstField(err); got != tc.wantField {
				t.Fatalf("field %q (%v), want %q", got, err, tc.wantField)
			}
		})
	}
}

// TestArtifactKey_CredentialsAreIdentity: the same page under other
// credentials is another artifact; the key names only the identity.
func TestArtifactKey_CredentialsAreIdentity(t *testing.T) {
	base := Payload{V: 1, ManualID: "m", Version: "1", Source: Source{URL: "https://docs.example.com/"}}
	withRef := func(identity string) Payload {
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
