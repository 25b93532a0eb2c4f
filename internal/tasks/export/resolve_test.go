package export

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestResolve_EveryKindBesideTheTask: resolve reads each kind of data an
// envelope names beside its task, for its own task only. A reference the
// task does not own, data that is gone, and a worker without a side store
// each fail for good (spec.ErrInvalid) naming the kind's field and saying
// why; no secret is in the error.
func TestResolve_EveryKindBesideTheTask(t *testing.T) {
	rdb := testsupport.StartRedis(t).Client()
	ctx := context.Background()
	store := &sidestore.Store{RDB: rdb}
	hosts := spec.Hosts{Sources: allowlist.MustParse("docs.example.com")}
	h := &Handler{cfg: Config{SideStore: store, Hosts: hosts}}
	const html = "<p>a large manual"
	for _, tc := range []struct {
		field string
		// env stores the kind's data for owner and returns the envelope.
		env   func(t *testing.T, owner string) spec.Envelope
		check func(j job) bool
	}{
		{"source.html_ref", func(t *testing.T, owner string) spec.Envelope {
			ref, err := store.PutHTML(ctx, owner, html, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return spec.Envelope{V: 1, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{HTMLRef: &ref}}
		}, func(j job) bool {
			// Owned, not read: the render reads it (loadDocument).
			if j.document == nil || j.Source.HTML != "" {
				return false
			}
			err := h.loadDocument(ctx, "owner-source.html_ref", &j)
			return err == nil && j.Source.HTML == html && j.Source.HTMLRef == nil && j.document == nil
		}},
		{"source.credentials_ref", func(t *testing.T, owner string) spec.Envelope {
			ref, err := store.PutCredentials(ctx, owner, spec.Credentials{Headers: map[string]string{"Authorization": "Bearer s3cret"}}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return spec.Envelope{V: 1, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{URL: "https://docs.example.com/m", Credentials: &ref}}
		}, func(j job) bool { return j.auth.Headers["Authorization"] == "Bearer s3cret" }},
		{"encryption_ref", func(t *testing.T, owner string) spec.Envelope {
			ref, err := store.PutPasswords(ctx, owner, spec.Passwords{Owner: "s3cret"}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return spec.Envelope{V: 1, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{HTML: "<p>x"},
				Options: spec.Options{Encryption: &spec.Encryption{}}, EncryptionRef: &ref}
		}, func(j job) bool { return j.passwords.Owner == "s3cret" }},
		{"page_secrets_ref", func(t *testing.T, owner string) spec.Envelope {
			ref, err := store.PutPageSecrets(ctx, owner, spec.PageSecrets{Headers: []spec.ScopedHeader{{Name: "Authorization", Value: "Bearer s3cret"}},
				Cookies: []spec.PageCookie{{Name: "sid", Value: "s3cret", Domain: "docs.example.com"}}}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return spec.Envelope{V: 5, ManualID: "m", Version: "1", Source: spec.EnvelopeSource{HTML: "<p>x"},
				Options: spec.Options{Page: &spec.PageOptions{}}, PageSecretsRef: &ref}
		}, func(j job) bool {
			p := j.Options.Page
			return len(p.Headers) == 1 && p.Headers[0].Value == "Bearer s3cret" && len(p.Cookies) == 1 && p.Cookies[0].Value == "s3cret"
		}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			owner := "owner-" + tc.field
			env := tc.env(t, owner)
			j, err := h.resolve(ctx, owner, env)
			if err != nil || !tc.check(j) {
				t.Fatalf("the owner's resolve = %+v, %v", j, err)
			}
			refused := func(who string, h *Handler, want string) {
				t.Helper()
				_, err := h.resolve(ctx, who, env)
				if !errors.Is(err, spec.ErrInvalid) || spec.FirstField(err) != tc.field || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v; want a FieldError of %s saying %q", who, err, tc.field, want)
				}
				if err != nil && strings.Contains(err.Error(), "s3cret") {
					t.Errorf("%s: the error shows the secret: %v", who, err)
				}
			}
			refused("thief", h, "not stored for this export")
			refused(owner, &Handler{cfg: Config{Hosts: hosts}}, "this worker has no store of")
			if n, err := store.Release(ctx, owner, sidestore.Refs(&env)...); n != 1 || err != nil {
				t.Fatalf("Release = %d, %v", n, err)
			}
			refused(owner, h, "gone")
		})
	}
}
