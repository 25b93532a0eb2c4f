// Package sidestore keeps the data an export task needs beside the task in
// the queue Redis instead of inside it. An asynq task keeps its payload, and
// shows it on the dashboard, for RESULT_RETENTION after it completes (24 h
// by default): secrets must not stay there, and a 300 KiB document in each
// of 10,000 daily exports is gigabytes of Redis held for nothing.
//
// Three kinds of data live beside a task, each named in the envelope by a
// reference (Ref, Refs):
//
//   - HTML: a large inline document (source.html_ref), gzip-compressed under
//     its SHA-256, so two exports of one document share one copy (html.go);
//   - Credentials: per-export source credentials (source.credentials_ref),
//     under the task's id, sealed with SECRETS_KEY (secrets.go, seal.go);
//   - Passwords: an encryption's passwords (encryption_ref), the same way;
//   - PageSecrets: options.page's headers and cookies
//     (page_secrets_ref), the same way.
//
// Every kind follows one ownership protocol. Each piece belongs to tasks:
// whoever enqueues picks the task's id first and calls Put… with it before
// the task. The worker calls Get with the id of the task it runs on every
// attempt, and Redis, not the payload, says whether that task owns the data
// (ErrNotOwner otherwise; ErrMissing when it is gone), so a forged reference
// reads nothing. Once the task is final, Release gives up that task's
// ownership, at most once; the data goes with its last owner. A release by a
// task that does not own the data changes nothing. A TTL bounds what no
// Release reaches.
//
// The kinds differ only in how their hash records owners, a layout fixed
// by what v0.1.0 wrote (docs/COMPATIBILITY.md): the secret kinds have one
// owner ({owner, data}); a document is shared ({data, owners, o:<task>…}),
// and the worker's sweep drops owners asynq no longer has (SweepOwners).
// The queue Redis's persistence (AOF) keeps the data across a restart, like
// the tasks that need it.
package sidestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Outcomes callers branch on. An export that gets either fails for good.
var (
	// ErrMissing: the data is not in Redis (its TTL passed, or the task was
	// final already and released it).
	ErrMissing = errors.New("sidestore: the data stored beside the export is missing")
	// ErrNotOwner: the data is stored, but not for the asking task.
	ErrNotOwner = errors.New("sidestore: the data stored beside the export belongs to other exports")
)

// Kind is a kind of data stored beside a task.
type Kind int

const (
	HTML        Kind = iota // a large inline document, shared and compressed
	Credentials             // per-export source credentials, sealed
	Passwords               // an encryption's passwords, sealed
	PageSecrets             // options.page's headers and cookies, sealed
)

// kinds describes each Kind: what errors call it, which envelope field
// names it, how its hash records owners.
var kinds = [...]struct {
	name, field string
	layout      *layout
}{
	HTML:        {"source document", "source.html_ref", &shared},
	Credentials: {"credentials", "source.credentials_ref", &exclusive},
	Passwords:   {"passwords", "encryption_ref", &exclusive},
	PageSecrets: {"page headers and cookies", "page_secrets_ref", &exclusive},
}

func (k Kind) String() string { return kinds[k].name }

// Field is the envelope field whose reference names data of this kind.
func (k Kind) Field() string { return kinds[k].field }

// Ref names one piece of data beside a task: exactly one field is set.
type Ref struct {
	HTML        *spec.HTMLRef
	Credentials *spec.CredentialsRef
	Passwords   *spec.EncryptionRef
	PageSecrets *spec.PageSecretsRef
}

// Refs lists what env names beside its task, in the order an export reads
// it: the document first (what it holds is validated like an inline one).
func Refs(env *spec.Envelope) []Ref {
	var refs []Ref
	if r := env.Source.HTMLRef; r != nil {
		refs = append(refs, Ref{HTML: r})
	}
	if r := env.Source.Credentials; r != nil {
		refs = append(refs, Ref{Credentials: r})
	}
	if r := env.EncryptionRef; r != nil {
		refs = append(refs, Ref{Passwords: r})
	}
	if r := env.PageSecretsRef; r != nil {
		refs = append(refs, Ref{PageSecrets: r})
	}
	return refs
}

// Kind is the kind of data r names.
func (r Ref) Kind() Kind {
	switch {
	case r.HTML != nil:
		return HTML
	case r.Credentials != nil:
		return Credentials
	case r.PageSecrets != nil:
		return PageSecrets
	default:
		return Passwords
	}
}

// key is the Redis key of the data r names.
func (r Ref) key() string {
	switch r.Kind() {
	case HTML:
		return keyspace.HTML(r.HTML.SHA256)
	case Credentials:
		return keyspace.Credentials(r.Credentials.ID)
	case PageSecrets:
		return keyspace.PageSecrets(r.PageSecrets.ID)
	default:
		return keyspace.Passwords(r.Passwords.ID)
	}
}

// String names the data for errors: a digest or a task id, never a secret.
func (r Ref) String() string {
	switch r.Kind() {
	case HTML:
		return "source document sha256 " + r.HTML.SHA256
	case Credentials:
		return "credentials " + r.Credentials.ID
	case PageSecrets:
		return "page headers and cookies " + r.PageSecrets.ID
	default:
		return "passwords " + r.Passwords.ID
	}
}

// Value is what a Ref resolved to: the field of its kind is set.
type Value struct {
	HTML        string
	Credentials spec.Credentials
	Passwords   spec.Passwords
	PageSecrets spec.PageSecrets
}

// layout is how a kind's hash records its owners: the scripts of the
// protocol on it. Every get script returns {0} missing, {2} other tasks',
// {1, data} the owner's; every release script {released (0/1), owners
// left}, deleting the hash with its last owner.
type layout struct{ get, release *redis.Script }

// Format is the format of the hashes this build writes and reads: the
// fields of the layouts, with no "fmt" field. A later release that changes
// what a field means writes its format into "fmt"; every script refuses a
// hash whose "fmt" is newer, leaving it untouched, so a rollback to this
// build cannot lose another export's data (docs/COMPATIBILITY.md,
// "Downgrade").
const Format = 1

// ErrNewerFormat: the hash is of a newer format than this build reads (a
// later release wrote it); nothing was changed. Retried, since a worker of
// that release may take the export; a release of it is re-driven until it
// succeeds or the data's TTL ends.
var ErrNewerFormat = errors.New("sidestore: data stored by a newer release")

// formatCheck refuses a hash of a newer format, for the scripts.
const formatCheck = `
local fmt = tonumber(redis.call("HGET", KEYS[1], "fmt") or "1")
if fmt > 1 then return redis.error_reply("PDFEXPORT_NEWER_FORMAT " .. fmt) end
`

// formatErr turns a script's refusal of a newer format into ErrNewerFormat.
func formatErr(err error, what string) error {
	if err != nil && strings.HasPrefix(err.Error(), "PDFEXPORT_NEWER_FORMAT") {
		return fmt.Errorf("%w: %s has format %s, this build reads %d (roll forward, or let it expire with its TTL)",
			ErrNewerFormat, what, strings.TrimPrefix(err.Error(), "PDFEXPORT_NEWER_FORMAT "), Format)
	}
	return err
}

// exclusive is the layout of the secret kinds: {owner, data}, one owner,
// the task whose id the key carries.
//
//	KEYS[1] the hash   ARGV[1] the asking or releasing task
//	ARGV[2] (get) "owns": answer {1} without the data
var exclusive = layout{
	get: redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then return {0} end
` + formatCheck + `
if redis.call("HGET", KEYS[1], "owner") ~= ARGV[1] then return {2} end
if ARGV[2] == "owns" then return {1} end
return {1, redis.call("HGET", KEYS[1], "data")}
`),
	release: redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then return {0, 0} end
` + formatCheck + `
if redis.call("HGET", KEYS[1], "owner") ~= ARGV[1] then return {0, 1} end
redis.call("DEL", KEYS[1])
return {1, 0}
`),
}

// shared is the layout of a document: "data" (gzip), "owners" (how many
// "o:<task>" fields there are), one "o:<task>" per owner (its value: when it
// became one, unix ms, for the sweep).
//
//	KEYS[1] the hash   ARGV[1] the asking or releasing task
//	ARGV[2] (get) "owns": answer {1} without the data
var shared = layout{
	get: redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then return {0} end
` + formatCheck + `
if redis.call("HEXISTS", KEYS[1], "o:" .. ARGV[1]) == 0 then return {2} end
if ARGV[2] == "owns" then return {1} end
return {1, redis.call("HGET", KEYS[1], "data")}
`),
	release: redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then return {0, 0} end
` + formatCheck + `
local released = 0
if redis.call("HDEL", KEYS[1], "o:" .. ARGV[1]) == 1 then
  redis.call("HINCRBY", KEYS[1], "owners", -1)
  released = 1
end
local left = tonumber(redis.call("HGET", KEYS[1], "owners") or "0")
if left <= 0 then
  redis.call("DEL", KEYS[1])
  return {released, 0}
end
return {released, left}
`),
}

// Store implements the worker's and the enqueuer's side on one Redis.
type Store struct {
	RDB redis.UniversalClient
	// Keys seal what PutCredentials, PutPasswords and PutPageSecrets store and open what
	// Get reads of them (SECRETS_KEY); nil stores in clear and fails on a
	// sealed value. Release and the document kind need none.
	Keys *Keys

	mu      sync.Mutex
	hmacKey []byte // the identities' key, as this process last read it
	// compressing: the documents being compressed now, by reference.
	compressing map[spec.HTMLRef]*compression
}

// Get reads the data ref names for the task owner: ErrMissing when Redis
// does not have it, ErrNotOwner when owner does not own it. A secret is
// opened if sealed (ErrCannotOpen) and checked against the identity its
// reference claims; a document against its digest and size.
func (s *Store) Get(ctx context.Context, owner string, ref Ref) (Value, error) {
	res, err := s.get(ctx, owner, ref, "read")
	if err != nil {
		return Value{}, err
	}
	if len(res) < 2 {
		return Value{}, fmt.Errorf("%w: %s", ErrNotOwner, ref)
	}
	stored, _ := res[1].(string)
	k := ref.Kind()
	switch k {
	case HTML:
		html, err := decodeHTML(*ref.HTML, stored)
		return Value{HTML: html}, err
	case Credentials:
		c, err := s.openCredentials(ctx, owner, *ref.Credentials, stored)
		return Value{Credentials: c}, err
	case PageSecrets:
		var p spec.PageSecrets
		err := s.openSecret(ctx, owner, ref, stored, &p, func() []byte { return p.IdentityBytes() }, ref.PageSecrets.Identity)
		return Value{PageSecrets: p}, err
	default:
		p, err := s.openPasswords(ctx, owner, *ref.Passwords, stored)
		return Value{Passwords: p}, err
	}
}

// Owns answers as Get would, without reading the data: nil when owner owns
// it, ErrMissing or ErrNotOwner. A worker checks a document's ownership
// when a task starts and reads the document only if it renders: a task
// that finds its PDF stored, or waits for another worker's render, never
// transfers or inflates it.
func (s *Store) Owns(ctx context.Context, owner string, ref Ref) error {
	_, err := s.get(ctx, owner, ref, "owns")
	return err
}

// get runs ref's get script for owner ("read" or "owns") and maps its
// refusals to ErrMissing and ErrNotOwner.
func (s *Store) get(ctx context.Context, owner string, ref Ref, mode string) ([]any, error) {
	res, err := kinds[ref.Kind()].layout.get.Run(ctx, s.RDB, []string{ref.key()}, owner, mode).Slice()
	if err != nil {
		return nil, fmt.Errorf("sidestore: reading %s: %w", ref, formatErr(err, ref.String()))
	}
	switch code, _ := res[0].(int64); code {
	case 0:
		return nil, fmt.Errorf("%w: %s (expired after its TTL, or released)", ErrMissing, ref)
	case 1:
		return res, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNotOwner, ref)
}

// Release ends the task owner's ownership of what refs name, where it has
// one; the last owner's release deletes the data. It returns how many refs
// owner released: a second release, or one by a task that does not own the
// data, changes nothing. Every ref is tried; the errors are joined.
func (s *Store) Release(ctx context.Context, owner string, refs ...Ref) (int, error) {
	n := 0
	var errs []error
	for _, ref := range refs {
		res, err := kinds[ref.Kind()].layout.release.Run(ctx, s.RDB, []string{ref.key()}, owner).Slice()
		if err != nil {
			errs = append(errs, fmt.Errorf("sidestore: releasing %s: %w", ref, formatErr(err, ref.String())))
			continue
		}
		if released, _ := res[0].(int64); released == 1 {
			n++
		}
	}
	return n, errors.Join(errs...)
}
