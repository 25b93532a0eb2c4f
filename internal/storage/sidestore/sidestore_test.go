package sidestore

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func store(rdb redis.UniversalClient) *Store { return &Store{RDB: rdb} }

func getCredentials(ctx context.Context, s *Store, owner string, ref spec.CredentialsRef) (spec.Credentials, error) {
	v, err := s.Get(ctx, owner, Ref{Credentials: &ref})
	return v.Credentials, err
}

func getPasswords(ctx context.Context, s *Store, owner string, ref spec.EncryptionRef) (spec.Passwords, error) {
	v, err := s.Get(ctx, owner, Ref{Passwords: &ref})
	return v.Passwords, err
}

func getHTML(ctx context.Context, rdb redis.UniversalClient, owner string, ref spec.HTMLRef) (string, error) {
	v, err := store(rdb).Get(ctx, owner, Ref{HTML: &ref})
	return v.HTML, err
}

// releaseOne releases one ref and says whether owner released it.
func releaseOne(ctx context.Context, s *Store, owner string, ref Ref) (bool, error) {
	n, err := s.Release(ctx, owner, ref)
	return n == 1, err
}

// TestProtocol_EveryKind: the three kinds follow one ownership protocol. A
// task naming data it did not store (a forged reference) neither reads it
// nor takes it away, however often it releases; the owner reads it, and
// releases it once; then it is missing. A hash a later release wrote in a
// newer format is refused and left exactly as it was.
func TestProtocol_EveryKind(t *testing.T) {
	rdb := testsupport.StartRedis(t).Client()
	ctx := context.Background()
	s := store(rdb)
	for _, tc := range []struct {
		kind  Kind
		field string
		put   func(owner string) (Ref, error)
		check func(v Value) bool
	}{
		{HTML, "source.html_ref", func(owner string) (Ref, error) {
			r, err := s.PutHTML(ctx, owner, "<p>"+owner+"'s manual", time.Hour)
			return Ref{HTML: &r}, err
		}, func(v Value) bool { return strings.HasSuffix(v.HTML, "'s manual") }},
		{Credentials, "source.credentials_ref", func(owner string) (Ref, error) {
			r, err := s.PutCredentials(ctx, owner, spec.Credentials{Headers: map[string]string{"Authorization": "Bearer " + owner}}, time.Hour)
			return Ref{Credentials: &r}, err
		}, func(v Value) bool { return strings.HasPrefix(v.Credentials.Headers["Authorization"], "Bearer ") }},
		{Passwords, "encryption_ref", func(owner string) (Ref, error) {
			r, err := s.PutPasswords(ctx, owner, spec.Passwords{Owner: "pw-" + owner}, time.Hour)
			return Ref{Passwords: &r}, err
		}, func(v Value) bool { return strings.HasPrefix(v.Passwords.Owner, "pw-") }},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			owner := "owner-" + strings.ReplaceAll(tc.kind.String(), " ", "-")
			ref, err := tc.put(owner)
			if err != nil {
				t.Fatal(err)
			}
			if ref.Kind() != tc.kind || tc.kind.Field() != tc.field {
				t.Fatalf("kind %v, field %q; want %v, %q", ref.Kind(), tc.kind.Field(), tc.kind, tc.field)
			}
			if _, err := s.Get(ctx, "thief", ref); !errors.Is(err, ErrNotOwner) {
				t.Fatalf("another task's Get: %v, want ErrNotOwner", err)
			}
			for range 3 {
				if n, err := s.Release(ctx, "thief", ref); n != 0 || err != nil {
					t.Fatalf("another task's Release = %d, %v; want nothing released", n, err)
				}
			}
			if v, err := s.Get(ctx, owner, ref); err != nil || !tc.check(v) {
				t.Fatalf("the owner's Get = %+v, %v", v, err)
			}
			if n, err := s.Release(ctx, owner, ref, ref); n != 1 || err != nil {
				t.Fatalf("the owner's Release of the ref twice = %d, %v; want one released", n, err)
			}
			if _, err := s.Get(ctx, owner, ref); !errors.Is(err, ErrMissing) {
				t.Fatalf("after Release: %v, want ErrMissing", err)
			}
			if n := rdb.Exists(ctx, ref.key()).Val(); n != 0 {
				t.Fatalf("%s outlived its last owner", ref.key())
			}

			newer := "newer-" + owner
			ref, err = tc.put(newer)
			if err != nil {
				t.Fatal(err)
			}
			rdb.HSet(ctx, ref.key(), "fmt", 2)
			before := rdb.HGetAll(ctx, ref.key()).Val()
			_, getErr := s.Get(ctx, newer, ref)
			_, relErr := s.Release(ctx, newer, ref)
			for _, err := range []error{getErr, relErr} {
				if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "format 2") {
					t.Errorf("on a hash of format 2: %v, want ErrNewerFormat naming it", err)
				}
			}
			if after := rdb.HGetAll(ctx, ref.key()).Val(); !maps.Equal(before, after) {
				t.Errorf("the hash of a newer format changed: %v, was %v", after, before)
			}
		})
	}
}

// TestRefs_NamesWhatTheEnvelopeStoredBeside: Refs lists every reference of
// an envelope, the document first, and nothing for an envelope without.
func TestRefs_NamesWhatTheEnvelopeStoredBeside(t *testing.T) {
	doc, cred, pw := &spec.HTMLRef{SHA256: "ab"}, &spec.CredentialsRef{ID: "t"}, &spec.EncryptionRef{ID: "t"}
	for _, tc := range []struct {
		name string
		env  spec.Envelope
		want []Kind
	}{
		{"none", spec.Envelope{Source: spec.EnvelopeSource{URL: "https://x"}}, nil},
		{"document and passwords", spec.Envelope{Source: spec.EnvelopeSource{HTMLRef: doc}, EncryptionRef: pw}, []Kind{HTML, Passwords}},
		{"credentials and passwords", spec.Envelope{Source: spec.EnvelopeSource{Credentials: cred}, EncryptionRef: pw}, []Kind{Credentials, Passwords}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Kind
			for _, r := range Refs(&tc.env) {
				got = append(got, r.Kind())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("kinds %v, want %v", got, tc.want)
			}
		})
	}
}
