package sidestore

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The secret kinds: per-export source credentials (headers and cookies a
// caller sends to render a page as one of its users), an encryption's
// passwords and options.page's headers and cookies. Each is stored under its task's id ("pdfexport:credentials:{<task
// id>}", "pdfexport:passwords:{<task id>}", a hash of the owner and the
// data, with a TTL), sealed with SECRETS_KEY when the Store has Keys.
//
// The reference's Identity is HMAC-SHA256 of the secret under a key only
// Redis holds ("pdfexport:credentials:hmac-key", created by the first Put;
// spec.Passwords.IdentityBytes keeps passwords apart from credentials). The
// identity goes into the artifact key: the same credentials give the same
// artifact, different ones never share it, and the key says nothing about
// them (a guessable cookie cannot be tested against it without the
// Redis-held key). The worker recomputes the identity on Get, so a reference
// cannot claim another user's artifact. Put reads the key from Redis each
// time; Get keeps it and reads it again once when an identity does not
// match, so a flushed Redis (a new key) costs renders, never failed exports.

// keyspace.IdentityKey holds the random key of the identities. Losing it (a
// wiped Redis) only changes future artifact keys: those exports render
// again.

// identity returns the keyed hash of b, creating the key on first use.
func (s *Store) identity(ctx context.Context, b []byte) (string, error) {
	k, err := s.key(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, k)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)), nil
}

func (s *Store) key(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hmacKey != nil {
		return s.hmacKey, nil
	}
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh)
	// SET NX then GET: every process ends up with the first key written.
	if err := s.RDB.SetNX(ctx, keyspace.IdentityKey, hex.EncodeToString(fresh), 0).Err(); err != nil {
		return nil, fmt.Errorf("sidestore: creating the identity key: %w", err)
	}
	v, err := s.RDB.Get(ctx, keyspace.IdentityKey).Result()
	if err != nil {
		return nil, fmt.Errorf("sidestore: reading the identity key: %w", err)
	}
	k, err := hex.DecodeString(v)
	if err != nil || len(k) < 32 {
		return nil, fmt.Errorf("sidestore: %s is not a hex key of 32 bytes or more", keyspace.IdentityKey)
	}
	s.hmacKey = k
	return k, nil
}

func (s *Store) forgetKey() {
	s.mu.Lock()
	s.hmacKey = nil
	s.mu.Unlock()
}

// putSecret stores plain, sealed, for ttl under redisKey as owner's, and
// returns the identity of identityBytes under the key Redis has now.
func (s *Store) putSecret(ctx context.Context, redisKey, owner string, identityBytes, plain []byte, ttl time.Duration) (string, error) {
	// The key as Redis has it now (one GET): a long-lived enqueuer must not
	// hash under a key a flushed Redis no longer has, which no worker could
	// verify.
	s.forgetKey()
	ident, err := s.identity(ctx, identityBytes)
	if err != nil {
		return "", err
	}
	body, err := s.Keys.seal(redisKey, owner, plain)
	if err != nil {
		return "", err
	}
	if _, err := s.RDB.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, redisKey)
		p.HSet(ctx, redisKey, "owner", owner, "data", body)
		p.PExpire(ctx, redisKey, ttl)
		return nil
	}); err != nil {
		return "", fmt.Errorf("sidestore: storing %s: %w", redisKey, err)
	}
	return ident, nil
}

// verify checks that identityBytes hash to the identity a reference claims,
// reading the key from Redis again once on a mismatch: it may have changed
// since this process read it (a flushed or replaced Redis).
func (s *Store) verify(ctx context.Context, ref Ref, identityBytes []byte, claimed string) error {
	for attempt := 0; ; attempt++ {
		ident, err := s.identity(ctx, identityBytes)
		if err != nil {
			return err
		}
		if hmac.Equal([]byte(ident), []byte(claimed)) {
			return nil
		}
		if attempt > 0 {
			return fmt.Errorf("sidestore: %s do not match the identity their reference claims", ref)
		}
		s.forgetKey()
	}
}

// PutCredentials stores c for ttl as the credentials of the task owner (an
// id the enqueuer gives the task) and returns the reference its envelope
// carries.
func (s *Store) PutCredentials(ctx context.Context, owner string, c spec.Credentials, ttl time.Duration) (spec.CredentialsRef, error) {
	if owner == "" {
		return spec.CredentialsRef{}, errors.New("sidestore: PutCredentials needs the owning task's id")
	}
	plain, err := json.Marshal(c.Canonical())
	if err != nil {
		return spec.CredentialsRef{}, fmt.Errorf("sidestore: %w", err)
	}
	ident, err := s.putSecret(ctx, keyspace.Credentials(owner), owner, c.IdentityBytes(), plain, ttl)
	if err != nil {
		return spec.CredentialsRef{}, err
	}
	return spec.CredentialsRef{ID: owner, Identity: ident, HeaderNames: c.HeaderNames(), CookieNames: c.CookieNames()}, nil
}

// PutPasswords stores p for ttl as the passwords of the task owner and
// returns the reference its envelope carries.
func (s *Store) PutPasswords(ctx context.Context, owner string, p spec.Passwords, ttl time.Duration) (spec.EncryptionRef, error) {
	if owner == "" {
		return spec.EncryptionRef{}, errors.New("sidestore: PutPasswords needs the owning task's id")
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return spec.EncryptionRef{}, fmt.Errorf("sidestore: %w", err)
	}
	ident, err := s.putSecret(ctx, keyspace.Passwords(owner), owner, p.IdentityBytes(), plain, ttl)
	if err != nil {
		return spec.EncryptionRef{}, err
	}
	return spec.EncryptionRef{ID: owner, Identity: ident}, nil
}

// PutPageSecrets stores p for ttl as options.page's headers and cookies of
// the task owner and returns the reference its envelope carries.
func (s *Store) PutPageSecrets(ctx context.Context, owner string, p spec.PageSecrets, ttl time.Duration) (spec.PageSecretsRef, error) {
	if owner == "" {
		return spec.PageSecretsRef{}, errors.New("sidestore: PutPageSecrets needs the owning task's id")
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return spec.PageSecretsRef{}, fmt.Errorf("sidestore: %w", err)
	}
	ident, err := s.putSecret(ctx, keyspace.PageSecrets(owner), owner, p.IdentityBytes(), plain, ttl)
	if err != nil {
		return spec.PageSecretsRef{}, err
	}
	return spec.PageSecretsRef{ID: owner, Identity: ident, HeaderNames: p.HeaderNames(), CookieNames: p.CookieNames()}, nil
}

// openSecret opens the sealed value stored for ref into v and checks the
// identity its reference claims (identityBytes reads v once decoded). A
// decoding error is not quoted: it could quote a secret.
func (s *Store) openSecret(ctx context.Context, owner string, ref Ref, stored string, v any, identityBytes func() []byte, claimed string) error {
	body, err := s.Keys.open(ref.key(), owner, stored)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("sidestore: stored %s are malformed", ref)
	}
	return s.verify(ctx, ref, identityBytes(), claimed)
}

func (s *Store) openCredentials(ctx context.Context, owner string, ref spec.CredentialsRef, stored string) (spec.Credentials, error) {
	r := Ref{Credentials: &ref}
	body, err := s.Keys.open(r.key(), owner, stored)
	if err != nil {
		return spec.Credentials{}, err
	}
	var c spec.Credentials
	if err := json.Unmarshal(body, &c); err != nil {
		return spec.Credentials{}, fmt.Errorf("sidestore: stored %s are malformed: %w", r, err)
	}
	if err := s.verify(ctx, r, c.IdentityBytes(), ref.Identity); err != nil {
		return spec.Credentials{}, err
	}
	return c, nil
}

func (s *Store) openPasswords(ctx context.Context, owner string, ref spec.EncryptionRef, stored string) (spec.Passwords, error) {
	var p spec.Passwords
	if err := s.openSecret(ctx, owner, Ref{Passwords: &ref}, stored, &p, func() []byte { return p.IdentityBytes() }, ref.Identity); err != nil {
		return spec.Passwords{}, err
	}
	return p, nil
}
