// Package credstore keeps per-export source credentials (headers and cookies
// a caller sends to render a page as one of its users) beside their export
// task in the queue Redis instead of inside it: a task's payload stays in
// Redis, and on the dashboard, for RESULT_RETENTION after it completes, and
// secrets must not.
//
// The credentials belong to the task that stored them. Whoever enqueues picks
// the task's id first and calls Put with it before the task: it stores the
// credentials under that id ("pdfexport:credentials:{<task id>}", a hash of
// the owner and the data, with a TTL) and returns a spec.CredentialsRef whose
// Identity is HMAC-SHA256 of the credentials under
// a key only Redis holds ("pdfexport:credentials:hmac-key", created by the
// first Put). The identity goes into the artifact key: the same credentials
// give the same artifact, different ones never share it, and the key says
// nothing about them (a guessable cookie cannot be tested against it without
// the Redis-held key). The worker calls Get with the id of the task it runs
// on every attempt: Redis, not the payload, says whether that task owns the
// credentials, and the worker recomputes the identity, so a reference cannot
// claim another user's artifact. Release, once the task is final, deletes
// them only for their owner: a second release, or one by another task,
// changes nothing. Credentials stored by the previous release (a plain
// value, no owner) are claimed by the first task that uses or releases
// them. Put reads the key from Redis each time;
// Get keeps it and reads it again once when an identity does not match, so a
// flushed Redis (a new key) costs renders, never failed exports.
//
// The passwords of options.encryption are kept the same way (passwords.go).
// With SECRETS_KEY (Store.Keys) both are sealed with AES-256-GCM before
// they reach Redis (seal.go).
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
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// hmacKeyName holds the random key of the identities. Losing it (a wiped
// Redis) only changes future artifact keys: those exports render again.
const hmacKeyName = "pdfexport:credentials:hmac-key"

func key(id string) string { return "pdfexport:credentials:{" + id + "}" }

// Outcomes callers branch on. An export that gets either fails for good.
var (
	// ErrMissing: the credentials are not in Redis (their TTL passed, or
	// the task was final already).
	ErrMissing = errors.New("credstore: source credentials are missing")
	// ErrNotOwner: the credentials belong to another task.
	ErrNotOwner = errors.New("credstore: source credentials belong to another export")
)

// getScript returns the credentials if ARGV[1] owns them; a plain value
// (stored by the previous release, without an owner) is claimed.
//
//	KEYS[1] the credentials   ARGV[1] the asking task's id
//
// Returns {0} missing, {2} another task's, {1, data} the owner's.
var getScript = redis.NewScript(`
local t = redis.call("TYPE", KEYS[1]).ok
if t == "none" then return {0} end
if t == "string" then
  local v = redis.call("GET", KEYS[1])
  local ttl = redis.call("PTTL", KEYS[1])
  redis.call("DEL", KEYS[1])
  redis.call("HSET", KEYS[1], "owner", ARGV[1], "data", v)
  if ttl > 0 then redis.call("PEXPIRE", KEYS[1], ttl) end
  return {1, v}
end
if redis.call("HGET", KEYS[1], "owner") ~= ARGV[1] then return {2} end
return {1, redis.call("HGET", KEYS[1], "data")}
`)

// releaseScript deletes the credentials if ARGV[1] owns them (or they have
// no owner: stored by the previous release).
//
// Returns 1 when it deleted them.
var releaseScript = redis.NewScript(`
local t = redis.call("TYPE", KEYS[1]).ok
if t == "string" or (t == "hash" and redis.call("HGET", KEYS[1], "owner") == ARGV[1]) then
  redis.call("DEL", KEYS[1])
  return 1
end
return 0
`)

// Store implements the worker's and the client's side on one Redis.
type Store struct {
	RDB redis.UniversalClient
	// Keys seal what Put and PutPasswords store and open what Get and
	// GetPasswords read (SECRETS_KEY); nil stores in clear and fails on a
	// sealed value. Release needs none.
	Keys *Keys

	mu      sync.Mutex
	hmacKey []byte
}

// identity returns the keyed hash of c, creating the key on first use.
func (s *Store) identity(ctx context.Context, c spec.Credentials) (string, error) {
	k, err := s.key(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, k)
	m.Write(c.IdentityBytes())
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

// Put stores c for ttl as the credentials of the task owner (an id the
// enqueuer gives the task) and returns the reference its envelope carries.
func (s *Store) Put(ctx context.Context, owner string, c spec.Credentials, ttl time.Duration) (spec.CredentialsRef, error) {
	if owner == "" {
		return spec.CredentialsRef{}, errors.New("credstore: Put needs the owning task's id")
	}
	// The key as Redis has it now (one GET): a long-lived enqueuer must not
	// hash under a key a flushed Redis no longer has, which no worker could
	// verify.
	s.forgetKey()
	ident, err := s.identity(ctx, c)
	if err != nil {
		return spec.CredentialsRef{}, err
	}
	ref := spec.CredentialsRef{ID: owner, Identity: ident, HeaderNames: c.HeaderNames(), CookieNames: c.CookieNames()}
	plain, err := json.Marshal(c.Canonical())
	if err != nil {
		return spec.CredentialsRef{}, fmt.Errorf("credstore: %w", err)
	}
	body, err := s.Keys.seal(key(owner), owner, plain)
	if err != nil {
		return spec.CredentialsRef{}, err
	}
	if _, err := s.RDB.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key(owner))
		p.HSet(ctx, key(owner), "owner", owner, "data", body)
		p.PExpire(ctx, key(owner), ttl)
		return nil
	}); err != nil {
		return spec.CredentialsRef{}, fmt.Errorf("credstore: storing credentials: %w", err)
	}
	return ref, nil
}

// Get reads the credentials ref names for the task owner, checks that owner
// stored them (ErrNotOwner), opens them if sealed (ErrCannotOpen) and checks
// that they hash to the reference's identity. Gone: ErrMissing.
func (s *Store) Get(ctx context.Context, owner string, ref spec.CredentialsRef) (spec.Credentials, error) {
	res, err := getScript.Run(ctx, s.RDB, []string{key(ref.ID)}, owner).Slice()
	if err != nil {
		return spec.Credentials{}, fmt.Errorf("credstore: reading credentials: %w", err)
	}
	switch code, _ := res[0].(int64); {
	case code == 0:
		return spec.Credentials{}, ErrMissing
	case code == 2 || len(res) < 2:
		return spec.Credentials{}, ErrNotOwner
	}
	stored, _ := res[1].(string)
	body, err := s.Keys.open(key(ref.ID), owner, stored)
	if err != nil {
		return spec.Credentials{}, err
	}
	var c spec.Credentials
	if err := json.Unmarshal(body, &c); err != nil {
		return spec.Credentials{}, fmt.Errorf("credstore: stored credentials are malformed: %w", err)
	}
	for attempt := 0; ; attempt++ {
		ident, err := s.identity(ctx, c)
		if err != nil {
			return spec.Credentials{}, err
		}
		if hmac.Equal([]byte(ident), []byte(ref.Identity)) {
			return c, nil
		}
		if attempt > 0 {
			return spec.Credentials{}, fmt.Errorf("credstore: credentials %s do not match the identity their reference claims", ref.ID)
		}
		// The key in Redis may have changed since this process read it (a
		// flushed or replaced Redis): read it again, once.
		s.forgetKey()
	}
}

// Release deletes the credentials ref names if the task owner owns them; it
// reports whether it deleted anything.
func (s *Store) Release(ctx context.Context, owner string, ref spec.CredentialsRef) (bool, error) {
	n, err := releaseScript.Run(ctx, s.RDB, []string{key(ref.ID)}, owner).Int()
	if err != nil {
		return false, fmt.Errorf("credstore: deleting credentials: %w", err)
	}
	return n == 1, nil
}
