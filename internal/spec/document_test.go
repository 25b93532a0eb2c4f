package spec_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/pdfexport/pdfexport/internal/spec"
)

// TestArtifactKey_UnchangedWithoutDocumentOptions pins the keys of exports
// that ask for no document option: adding the options must not re-render
// every stored artifact.
func TestArtifactKey_UnchangedWithoutDocumentOptions(t *testing.T) {
	p := validPayload()
	if got, want := p.ArtifactKey(), "ops-guide/2026.11.3/4b9daf45c8884bd3.pdf"; got != want {
		t.Fatalf("plain key = %s, want %s (the canonical form changed)", got, want)
	}
	p.Options.Outline = true
	if got, want := p.ArtifactKey(), "ops-guide/2026.11.3/79be1a7999741052.pdf"; got != want {
		t.Fatalf("outline key = %s, want %s", got, want)
	}
}

func docRequest() Request {
	return Request{V: 1, ManualID: "ops-guide", Version: "2026.11.3",
		Source: RequestSource{URL: "https://docs.example.com/ops-guide/2026.11.3/print"}}
}

func TestDocumentOptions_Valid(t *testing.T) {
	r := docRequest()
	r.Options.Metadata = &Metadata{Title: "Ops guide", Author: "Docs team", Subject: "Operations", Keywords: []string{"ops", "guide"}, Creator: "pdfexport", Language: "en-GB"}
	r.Options.Watermark = &Watermark{Text: "CONFIDENTIAL", Opacity: new(0.3), Angle: new(30.0), FontSizePt: new(60.0)}
	r.Options.Encryption = &Encryption{UserPassword: "reader", OwnerPassword: "owner-secret", Allow: []string{"print", "copy"}}
	if err := r.Validate(Hosts{Sources: testAllowed}); err != nil {
		t.Fatal(err)
	}
}

func TestDocumentOptions_RejectsWithFieldAndRule(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Options)
		field  string
		rule   string
	}{
		{"long title", func(o *Options) { o.Metadata = &Metadata{Title: strings.Repeat("t", MaxMetadataBytes+1)} }, "options.metadata.title", "longer than"},
		{"control character", func(o *Options) { o.Metadata = &Metadata{Author: "a\x00b"} }, "options.metadata.author", "control"},
		{"too many keywords", func(o *Options) { o.Metadata = &Metadata{Keywords: make([]string, MaxKeywords+1)} }, "options.metadata.keywords", "more than"},
		{"empty keyword", func(o *Options) { o.Metadata = &Metadata{Keywords: []string{"a", ""}} }, "options.metadata.keywords[1]", "empty"},
		{"bad language", func(o *Options) { o.Metadata = &Metadata{Language: "english please"} }, "options.metadata.language", "BCP 47"},
		{"watermark without text", func(o *Options) { o.Watermark = &Watermark{} }, "options.watermark.text", "required"},
		{"watermark not Latin-1", func(o *Options) { o.Watermark = &Watermark{Text: "機密"} }, "options.watermark.text", "Latin-1"},
		{"opacity over 1", func(o *Options) { o.Watermark = &Watermark{Text: "x", Opacity: new(1.5)} }, "options.watermark.opacity", "between 0 and 1"},
		{"opacity negative", func(o *Options) { o.Watermark = &Watermark{Text: "x", Opacity: new(-0.1)} }, "options.watermark.opacity", "between 0 and 1"},
		{"angle", func(o *Options) { o.Watermark = &Watermark{Text: "x", Angle: new(400.0)} }, "options.watermark.angle", "between -180 and 180"},
		{"font size", func(o *Options) { o.Watermark = &Watermark{Text: "x", FontSizePt: new(0.5)} }, "options.watermark.font_size_pt", "between"},
		{"no owner password", func(o *Options) { o.Encryption = &Encryption{UserPassword: "u"} }, "options.encryption.owner_password", "required"},
		{"same passwords", func(o *Options) { o.Encryption = &Encryption{UserPassword: "same", OwnerPassword: "same"} }, "options.encryption.user_password", "must differ from the owner password"},
		{"long password", func(o *Options) { o.Encryption = &Encryption{OwnerPassword: strings.Repeat("p", 128)} }, "options.encryption.owner_password", "longer than 127"},
		{"non-ASCII password", func(o *Options) { o.Encryption = &Encryption{OwnerPassword: "pässword"} }, "options.encryption.owner_password", "printable ASCII"},
		{"unknown permission", func(o *Options) { o.Encryption = &Encryption{OwnerPassword: "o", Allow: []string{"print", "fly"}} }, "options.encryption.allow[1]", "must be one of print, print_high"},
		{"duplicate permission", func(o *Options) { o.Encryption = &Encryption{OwnerPassword: "o", Allow: []string{"copy", "copy"}} }, "options.encryption.allow[1]", "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := docRequest()
			tt.mutate(&r.Options)
			err := r.Validate(Hosts{Sources: testAllowed})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			var found bool
			for _, e := range flatten(err) {
				var fe *FieldError
				if errors.As(e, &fe) && fe.Field == tt.field && strings.Contains(fe.Rule, tt.rule) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no error on %s with %q in: %v", tt.field, tt.rule, err)
			}
			for _, secret := range []string{"same", "pässword", strings.Repeat("p", 128)} {
				if strings.Contains(tt.name, "password") && strings.Contains(err.Error(), secret) {
					t.Fatalf("the error quotes the password: %v", err)
				}
			}
		})
	}
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// TestEncryption_PasswordsNeverInTheEnvelope: the envelope of a request with
// passwords carries only the permissions; an envelope with passwords, or a
// request naming encryption_ref, is refused naming the field.
func TestEncryption_PasswordsNeverInTheEnvelope(t *testing.T) {
	r := docRequest()
	r.Options.Encryption = &Encryption{UserPassword: "reader-pw", OwnerPassword: "owner-pw", Allow: []string{"print"}}
	env := r.Envelope()
	b, _ := env.Encode()
	if strings.Contains(string(b), "reader-pw") || strings.Contains(string(b), "owner-pw") || strings.Contains(string(b), "password") {
		t.Fatalf("envelope carries the passwords: %s", b)
	}
	if r.Options.Encryption.OwnerPassword != "owner-pw" {
		t.Fatal("Envelope changed the request's options")
	}
	// The enqueuer adds the reference; then the envelope is valid.
	if err := env.Validate(Hosts{Sources: testAllowed}); FirstField(err) != "encryption_ref" {
		t.Fatalf("an envelope asking for encryption without a reference: %v, want encryption_ref refused", err)
	}
	env.EncryptionRef = &EncryptionRef{ID: "task-1", Identity: strings.Repeat("ab", 32)}
	if err := env.Validate(Hosts{Sources: testAllowed}); err != nil {
		t.Fatal(err)
	}
	withPW := env
	withPW.Options.Encryption = &Encryption{OwnerPassword: "owner-pw"}
	err := withPW.Validate(Hosts{Sources: testAllowed})
	if FirstField(err) != "options.encryption.owner_password" || strings.Contains(err.Error(), "owner-pw") {
		t.Fatalf("an envelope with a password: %v", err)
	}
	_, err = DecodeRequest([]byte(`{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"encryption_ref":{"id":"t","identity":"x"}}`))
	if !errors.Is(err, ErrEnvelopeOnly) || FirstField(err) != "encryption_ref" {
		t.Fatalf("a request naming encryption_ref: %v, want ErrEnvelopeOnly on encryption_ref", err)
	}
}

// TestArtifactKey_DocumentOptions: every document option changes the key;
// passwords only through the reference's keyed identity; the order of
// permissions does not.
func TestArtifactKey_DocumentOptions(t *testing.T) {
	base := validPayload()
	ref := func(ident string) *EncryptionRef { return &EncryptionRef{ID: "t", Identity: strings.Repeat(ident, 64)} }
	mutations := map[string]func(*Envelope){
		"title":      func(p *Envelope) { p.Options.Metadata = &Metadata{Title: "A"} },
		"author":     func(p *Envelope) { p.Options.Metadata = &Metadata{Author: "A"} },
		"keywords":   func(p *Envelope) { p.Options.Metadata = &Metadata{Keywords: []string{"a"}} },
		"language":   func(p *Envelope) { p.Options.Metadata = &Metadata{Language: "de"} },
		"watermark":  func(p *Envelope) { p.Options.Watermark = &Watermark{Text: "DRAFT"} },
		"opacity":    func(p *Envelope) { p.Options.Watermark = &Watermark{Text: "DRAFT", Opacity: new(0.5)} },
		"encryption": func(p *Envelope) { p.Options.Encryption = &Encryption{}; p.EncryptionRef = ref("a") },
		"passwords":  func(p *Envelope) { p.Options.Encryption = &Encryption{}; p.EncryptionRef = ref("b") },
		"permissions": func(p *Envelope) {
			p.Options.Encryption = &Encryption{Allow: []string{"print"}}
			p.EncryptionRef = ref("a")
		},
		"two perms": func(p *Envelope) {
			p.Options.Encryption = &Encryption{Allow: []string{"print", "copy"}}
			p.EncryptionRef = ref("a")
		},
		"metadata+wm": func(p *Envelope) {
			p.Options.Metadata = &Metadata{Title: "A"}
			p.Options.Watermark = &Watermark{Text: "DRAFT"}
		},
		"empty options": func(p *Envelope) {},
	}
	seen := map[string]string{}
	for name, mutate := range mutations {
		p := base
		mutate(&p)
		k := p.ArtifactKey()
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share key %s", name, other, k)
		}
		seen[k] = name
	}
	a, b := base, base
	a.Options.Encryption, a.EncryptionRef = &Encryption{Allow: []string{"print", "copy"}}, ref("a")
	b.Options.Encryption, b.EncryptionRef = &Encryption{Allow: []string{"copy", "print"}}, ref("a")
	if a.ArtifactKey() != b.ArtifactKey() {
		t.Error("the order of permissions changes the key")
	}
	c, d := base, base
	c.Options.Watermark = &Watermark{Text: "DRAFT"}
	d.Options.Watermark = &Watermark{Text: "DRAFT", Opacity: new(DefaultWatermarkOpacity), Angle: new(DefaultWatermarkAngle), FontSizePt: new(DefaultWatermarkFontSizePt)}
	if c.ArtifactKey() != d.ArtifactKey() {
		t.Error("spelling out the watermark defaults changes the key")
	}
	// A request with passwords, before the enqueuer stored them, shares no key.
	r := docRequest()
	r.Options.Encryption = &Encryption{OwnerPassword: "o"}
	if _, dup := seen[r.ArtifactKey()]; dup || r.ArtifactKey() == base.ArtifactKey() {
		t.Error("a request with unstored passwords shares a key")
	}
}

func TestEncryption_Permissions(t *testing.T) {
	if got := strings.Join(PermissionNames, ","); got != "print,print_high,copy,modify,annotate,fill_forms,extract_accessibility,assemble" {
		t.Fatalf("PermissionNames = %s", got)
	}
}
