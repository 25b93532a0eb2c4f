// Package htmlstore keeps large inline HTML documents beside their export
// tasks in the queue Redis instead of inside them: an asynq task keeps its
// payload for RESULT_RETENTION after it completes (24 h by default), and a
// 300 KiB document in each of 10,000 daily exports is gigabytes of Redis held
// for nothing.
//
// A document is stored gzip-compressed under its SHA-256
// ("pdfexport:html:{<hex>}", a hash with the data and its owners), so two
// exports of the same document share one copy. Each owner is a task: whoever
// enqueues picks the task's id and calls Put with it before the task; the
// worker calls Get with the id of the task it runs on every attempt, and
// Redis, not the payload, says whether that task owns the document
// (ErrNotOwner otherwise); once the task is final its Release gives up that
// task's ownership, at most once, and the copy goes with its last owner. A
// release by a task that does not own the document changes nothing. Copies
// stored by the previous release count anonymous references ("refs"): a task
// queued with one claims a reference when it first reads or releases it. A
// TTL, renewed by every Put,
// bounds what a task that never finishes (deleted from the dashboard, its
// worker gone for good) leaves behind. The queue Redis's persistence (AOF)
// keeps the copies across a restart, like the tasks that need them.
package htmlstore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Threshold is the size from which exportclient sends an inline document by
// reference: smaller ones cost less in the task than a second key.
const Threshold = 32 << 10

// DefaultTTL bounds how long a copy outlives its last Put when no Release
// comes: longer than any queue backlog plus every retry of a task should
// last (MAX_RETRY attempts of at most TASK_TIMEOUT each, with backoff).
const DefaultTTL = spec.DefaultSourceTTL

// ErrMissing: the document is not in Redis (its TTL passed, or it was
// deleted). An export that needs it fails for good.
var ErrMissing = errors.New("htmlstore: source document is missing")

func key(sha string) string { return "pdfexport:html:{" + sha + "}" }

// ErrNotOwner: the document is stored, but not for the asking task. An
// export that gets it fails for good.
var ErrNotOwner = errors.New("htmlstore: source document belongs to other exports")

// Fields of a document's hash: "data" (gzip), "owners" (how many "o:<task>"
// fields there are), one "o:<task>" per owner, one "r:<task>" per task that
// released (so it never counts twice), and "refs" (anonymous references
// stored by the previous release).

// putScript stores the compressed document unless it is there already and
// makes ARGV[3] an owner.
//
//	KEYS[1] the document's hash   ARGV[1] gzip data   ARGV[2] ttl in ms   ARGV[3] owner
//
// Returns the number of owners after the call.
var putScript = redis.NewScript(`
if redis.call("HEXISTS", KEYS[1], "data") == 0 then
  redis.call("HSET", KEYS[1], "data", ARGV[1])
end
if redis.call("HSETNX", KEYS[1], "o:" .. ARGV[3], 1) == 1 then
  redis.call("HINCRBY", KEYS[1], "owners", 1)
end
if redis.call("PTTL", KEYS[1]) < tonumber(ARGV[2]) then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return tonumber(redis.call("HGET", KEYS[1], "owners"))
`)

// claim makes a task queued by the previous release, which names the
// document but is not an owner, the owner of one anonymous reference, if
// one is left and the task has not released already. Shared by the scripts
// below; sets the local "owner" to true when ARGV[1] owns the document.
const claim = `
local owner = redis.call("HEXISTS", KEYS[1], "o:" .. ARGV[1]) == 1
if not owner and redis.call("HEXISTS", KEYS[1], "r:" .. ARGV[1]) == 0 and tonumber(redis.call("HGET", KEYS[1], "refs") or "0") > 0 then
  redis.call("HINCRBY", KEYS[1], "refs", -1)
  redis.call("HSET", KEYS[1], "o:" .. ARGV[1], 1)
  redis.call("HINCRBY", KEYS[1], "owners", 1)
  owner = true
end
`

// getScript returns the document if ARGV[1] owns it.
//
//	KEYS[1] the document's hash   ARGV[1] the asking task
//
// Returns {0} missing, {2} other tasks', {1, data} the owner's.
var getScript = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then return {0} end
` + claim + `
if not owner then return {2} end
return {1, redis.call("HGET", KEYS[1], "data")}
`)

// releaseScript ends ARGV[1]'s ownership, if it has one, and deletes the
// document with its last owner.
//
//	KEYS[1] the document's hash   ARGV[1] the releasing task
//
// Returns {released (0/1), owners and anonymous references left}.
var releaseScript = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then return {0, 0} end
` + claim + `
local released = 0
if owner then
  redis.call("HDEL", KEYS[1], "o:" .. ARGV[1])
  redis.call("HSET", KEYS[1], "r:" .. ARGV[1], 1)
  redis.call("HINCRBY", KEYS[1], "owners", -1)
  released = 1
end
local left = tonumber(redis.call("HGET", KEYS[1], "owners") or "0") + tonumber(redis.call("HGET", KEYS[1], "refs") or "0")
if left <= 0 then
  redis.call("DEL", KEYS[1])
  return {released, 0}
end
return {released, left}
`)

// Ref returns the reference of a document.
func Ref(html string) spec.HTMLRef {
	sum := sha256.Sum256([]byte(html))
	return spec.HTMLRef{SHA256: hex.EncodeToString(sum[:]), Bytes: len(html)}
}

// Put stores html (compressed) if it is not stored yet, makes the task owner
// one of its owners and keeps it at least ttl (0: DefaultTTL). It returns
// the reference the task's envelope names.
func Put(ctx context.Context, rdb redis.UniversalClient, owner, html string, ttl time.Duration) (spec.HTMLRef, error) {
	if owner == "" {
		return spec.HTMLRef{}, errors.New("htmlstore: Put needs the owning task's id")
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	ref := Ref(html)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // a few times smaller for HTML at a modest CPU cost
	_, _ = io.WriteString(zw, html)
	if err := zw.Close(); err != nil {
		return spec.HTMLRef{}, err
	}
	if err := putScript.Run(ctx, rdb, []string{key(ref.SHA256)}, buf.Bytes(), ttl.Milliseconds(), owner).Err(); err != nil {
		return spec.HTMLRef{}, fmt.Errorf("htmlstore: storing the source document: %w", err)
	}
	return ref, nil
}

// Get returns the document ref names if the task owner owns it, checking its
// size and digest. It returns an error wrapping ErrMissing when Redis does
// not have it, ErrNotOwner when owner does not own it.
func Get(ctx context.Context, rdb redis.UniversalClient, owner string, ref spec.HTMLRef) (string, error) {
	res, err := getScript.Run(ctx, rdb, []string{key(ref.SHA256)}, owner).Slice()
	if err != nil {
		return "", fmt.Errorf("htmlstore: reading source sha256 %s: %w", ref.SHA256, err)
	}
	switch code, _ := res[0].(int64); {
	case code == 0:
		return "", fmt.Errorf("%w: sha256 %s (expired after its TTL, or deleted)", ErrMissing, ref.SHA256)
	case code == 2 || len(res) < 2:
		return "", fmt.Errorf("%w: sha256 %s", ErrNotOwner, ref.SHA256)
	}
	data, _ := res[1].(string)
	zr, err := gzip.NewReader(strings.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("htmlstore: source sha256 %s: %w", ref.SHA256, err)
	}
	// At most one byte more than the reference says: a corrupt or hostile
	// value cannot make the worker inflate gigabytes.
	html, err := io.ReadAll(io.LimitReader(zr, int64(ref.Bytes)+1))
	if err != nil {
		return "", fmt.Errorf("htmlstore: source sha256 %s: %w", ref.SHA256, err)
	}
	if got := Ref(string(html)); got != ref {
		return "", fmt.Errorf("htmlstore: source sha256 %s: stored document has sha256 %s and %d bytes, not %d", ref.SHA256, got.SHA256, got.Bytes, ref.Bytes)
	}
	return string(html), nil
}

// Release ends the task owner's ownership of the document, if it has one;
// the last owner's release deletes it. It reports whether owner released
// anything: a second release, or one by a task that does not own the
// document, changes nothing.
func Release(ctx context.Context, rdb redis.UniversalClient, owner string, ref spec.HTMLRef) (bool, error) {
	res, err := releaseScript.Run(ctx, rdb, []string{key(ref.SHA256)}, owner).Slice()
	if err != nil {
		return false, fmt.Errorf("htmlstore: releasing source sha256 %s: %w", ref.SHA256, err)
	}
	released, _ := res[0].(int64)
	return released == 1, nil
}

// Store is Get and Release on one Redis, for the worker.
type Store struct{ RDB redis.UniversalClient }

// Get is the package's Get on s.RDB.
func (s Store) Get(ctx context.Context, owner string, ref spec.HTMLRef) (string, error) {
	return Get(ctx, s.RDB, owner, ref)
}

// Release is the package's Release on s.RDB.
func (s Store) Release(ctx context.Context, owner string, ref spec.HTMLRef) (bool, error) {
	return Release(ctx, s.RDB, owner, ref)
}
