// Package credstore keeps per-export source credentials (headers and cookies
// a caller sends to render a page as one of its users) beside their export
// task in the queue Redis instead of inside it: a task's payload stays in
// Redis, and on the dashboard, for RESULT_RETENTION after it completes, and
// secrets must not.
//
// Whoever enqueues calls Put before the task: it stores the credentials under
// a random id ("pdfexport:credentials:{<id>}", with a TTL) and returns a
// spec.CredentialsRef whose Identity is HMAC-SHA256 of the credentials under
// a key only Redis holds ("pdfexport:credentials:hmac-key", created by the
// first Put). The identity goes into the artifact key: the same credentials
// give the same artifact, different ones never share it, and the key says
// nothing about them (a guessable cookie cannot be tested against it without
// the Redis-held key). The worker calls Get on every attempt (it recomputes
// the identity, so a reference cannot claim another user's artifact) and
// Release once the task is final. Put reads the key from Redis each time;
// Get keeps it and reads it again once when an identity does not match, so a
// flushed Redis (a new key) costs renders, never failed exports.
package credstore

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// hmacKeyName holds the random key of the identities. Losing it (a wiped
// Redis) only changes future artifact keys: those exports render again.
const hmacKeyName = "pdfexport:credentials:hmac-key"

func key(id string) string { return "pdfexport:credentials:{" + id + "}" }

// ErrMissing: the credentials are not in Redis (their TTL passed, or the task
// was final already). An export that needs them fails for good.
var ErrMissing = errors.New("credstore: source credentials are missing")

// Credentials are the per-export headers and cookies.
type Credentials struct {
	Headers map[string]string `json:"headers,omitempty"`
	Cookies []spec.Cookie     `json:"cookies,omitempty"`
}

// Empty reports whether there is nothing to send.
func (c Credentials) Empty() bool { return len(c.Headers) == 0 && len(c.Cookies) == 0 }

// canonical is the byte string the identity hashes: header names
// canonicalized and sorted, cookies sorted by name and path.
func (c Credentials) canonical() []byte {
	type header struct{ N, V string }
	hs := make([]header, 0, len(c.Headers))
	for n, v := range c.Headers {
		hs = append(hs, header{http.CanonicalHeaderKey(n), v})
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].N < hs[j].N })
	cs := slices.Clone(c.Cookies)
	for i := range cs {
		if cs[i].Path == "" {
			cs[i].Path = "/"
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Name != cs[j].Name {
			return cs[i].Name < cs[j].Name
		}
		return cs[i].Path < cs[j].Path
	})
	b, _ := json.Marshal(struct {
		H []header
		C []spec.Cookie
	}{hs, cs})
	return b
}

// Store implements the worker's and the client's side on one Redis.
type Store struct {
	RDB redis.UniversalClient

	mu      sync.Mutex
	hmacKey []byte
}

// identity returns the keyed hash of c, creating the key on first use.
func (s *Store) identity(ctx context.Context, c Credentials) (string, error) {
	k, err := s.key(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, k)
	m.Write(c.canonical())
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
	if err := s.RDB.SetNX(ctx, hmacKeyName, hex.EncodeToString(fresh), 0).Err(); err != nil {
		return nil, fmt.Errorf("credstore: creating the identity key: %w", err)
	}
	v, err := s.RDB.Get(ctx, hmacKeyName).Result()
	if err != nil {
		return nil, fmt.Errorf("credstore: reading the identity key: %w", err)
	}
	k, err := hex.DecodeString(v)
	if err != nil || len(k) < 32 {
		return nil, fmt.Errorf("credstore: %s is not a hex key of 32 bytes or more", hmacKeyName)
	}
	s.hmacKey = k
	return k, nil
}

func (s *Store) forgetKey() {
	s.mu.Lock()
	s.hmacKey = nil
	s.mu.Unlock()
}

// Put stores c for ttl and returns the reference the payload carries.
func (s *Store) Put(ctx context.Context, c Credentials, ttl time.Duration) (spec.CredentialsRef, error) {
	// The key as Redis has it now (one GET): a long-lived enqueuer must not
	// hash under a key a flushed Redis no longer has, which no worker could
	// verify.
	s.forgetKey()
	ident, err := s.identity(ctx, c)
	if err != nil {
		return spec.CredentialsRef{}, err
	}
	idb := make([]byte, 16)
	_, _ = rand.Read(idb)
	ref := spec.CredentialsRef{ID: hex.EncodeToString(idb), Identity: ident}
	for n := range c.Headers {
		ref.HeaderNames = append(ref.HeaderNames, http.CanonicalHeaderKey(n))
	}
	sort.Strings(ref.HeaderNames)
	for _, ck := range c.Cookies {
		ref.CookieNames = append(ref.CookieNames, ck.Name)
	}
	body, err := json.Marshal(c)
	if err != nil {
		return spec.CredentialsRef{}, fmt.Errorf("credstore: %w", err)
	}
	if err := s.RDB.Set(ctx, key(ref.ID), body, ttl).Err(); err != nil {
		return spec.CredentialsRef{}, fmt.Errorf("credstore: storing credentials: %w", err)
	}
	return ref, nil
}

// Get reads the credentials ref names and checks they hash to its identity.
// Gone: ErrMissing.
func (s *Store) Get(ctx context.Context, ref spec.CredentialsRef) (Credentials, error) {
	body, err := s.RDB.Get(ctx, key(ref.ID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Credentials{}, ErrMissing
	}
	if err != nil {
		return Credentials{}, fmt.Errorf("credstore: reading credentials: %w", err)
	}
	var c Credentials
	if err := json.Unmarshal(body, &c); err != nil {
		return Credentials{}, fmt.Errorf("credstore: stored credentials are malformed: %w", err)
	}
	for attempt := 0; ; attempt++ {
		ident, err := s.identity(ctx, c)
		if err != nil {
			return Credentials{}, err
		}
		if hmac.Equal([]byte(ident), []byte(ref.Identity)) {
			return c, nil
		}
		if attempt > 0 {
			return Credentials{}, fmt.Errorf("credstore: credentials %s do not match the identity their reference claims", ref.ID)
		}
		// The key in Redis may have changed since this process read it (a
		// flushed or replaced Redis): read it again, once.
		s.forgetKey()
	}
}

// Release deletes the credentials once their task is final.
func (s *Store) Release(ctx context.Context, ref spec.CredentialsRef) error {
	if err := s.RDB.Del(ctx, key(ref.ID)).Err(); err != nil {
		return fmt.Errorf("credstore: deleting credentials: %w", err)
	}
	return nil
}
