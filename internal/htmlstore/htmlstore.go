// Package htmlstore keeps large inline HTML documents beside their export
// tasks in the queue Redis instead of inside them: an asynq task keeps its
// payload for RESULT_RETENTION after it completes (24 h by default), and a
// 300 KiB document in each of 10,000 daily exports is gigabytes of Redis held
// for nothing.
//
// A document is stored gzip-compressed under its SHA-256
// ("pdfexport:html:{<hex>}", a hash with the data and a reference count), so
// two exports of the same document share one copy. Whoever enqueues calls
// Put before the task (one reference per task); the worker calls Get on
// every attempt and Release once the task is final (completed, or failed for
// good): the last Release deletes the copy. A TTL, renewed by every Put,
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
const DefaultTTL = 48 * time.Hour

// ErrMissing: the document is not in Redis (its TTL passed, or it was
// deleted). An export that needs it fails for good.
var ErrMissing = errors.New("htmlstore: source document is missing")

func key(sha string) string { return "pdfexport:html:{" + sha + "}" }

// putScript stores the compressed document unless it is there already, and
// takes one reference.
//
//	KEYS[1] the document's hash   ARGV[1] gzip data   ARGV[2] ttl in ms
//
// Returns the reference count after the call.
var putScript = redis.NewScript(`
if redis.call("HEXISTS", KEYS[1], "data") == 0 then
  redis.call("HSET", KEYS[1], "data", ARGV[1])
end
local refs = redis.call("HINCRBY", KEYS[1], "refs", 1)
if redis.call("PTTL", KEYS[1]) < tonumber(ARGV[2]) then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return refs
`)

// releaseScript drops one reference and deletes the document with the last.
//
//	KEYS[1] the document's hash
//
// Returns the references left (0: deleted).
var releaseScript = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then
  return 0
end
local refs = redis.call("HINCRBY", KEYS[1], "refs", -1)
if refs <= 0 then
  redis.call("DEL", KEYS[1])
  return 0
end
return refs
`)

// Ref returns the reference of a document.
func Ref(html string) spec.HTMLRef {
	sum := sha256.Sum256([]byte(html))
	return spec.HTMLRef{SHA256: hex.EncodeToString(sum[:]), Bytes: len(html)}
}

// Put stores html (compressed) if it is not stored yet, takes one reference
// to it and keeps it at least ttl (0: DefaultTTL). It returns the reference
// the task names.
func Put(ctx context.Context, rdb redis.UniversalClient, html string, ttl time.Duration) (spec.HTMLRef, error) {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	ref := Ref(html)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // 3.7× on the Go spec; BestSpeed 2.9×
	_, _ = io.WriteString(zw, html)
	if err := zw.Close(); err != nil {
		return spec.HTMLRef{}, err
	}
	if err := putScript.Run(ctx, rdb, []string{key(ref.SHA256)}, buf.Bytes(), ttl.Milliseconds()).Err(); err != nil {
		return spec.HTMLRef{}, fmt.Errorf("htmlstore: storing the source document: %w", err)
	}
	return ref, nil
}

// Get returns the document ref names, checking its size and digest. It
// returns an error wrapping ErrMissing when Redis does not have it.
func Get(ctx context.Context, rdb redis.UniversalClient, ref spec.HTMLRef) (string, error) {
	data, err := rdb.HGet(ctx, key(ref.SHA256), "data").Bytes()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("%w: sha256 %s (expired after its TTL, or deleted)", ErrMissing, ref.SHA256)
	}
	if err != nil {
		return "", fmt.Errorf("htmlstore: reading source sha256 %s: %w", ref.SHA256, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
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

// Release drops one reference to the document; the last deletes it.
func Release(ctx context.Context, rdb redis.UniversalClient, ref spec.HTMLRef) error {
	if err := releaseScript.Run(ctx, rdb, []string{key(ref.SHA256)}).Err(); err != nil {
		return fmt.Errorf("htmlstore: releasing source sha256 %s: %w", ref.SHA256, err)
	}
	return nil
}

// Store is Get and Release on one Redis, for the worker's handler.
type Store struct{ RDB redis.UniversalClient }

// Get is the package's Get on s.RDB.
func (s Store) Get(ctx context.Context, ref spec.HTMLRef) (string, error) {
	return Get(ctx, s.RDB, ref)
}

// Release is the package's Release on s.RDB.
func (s Store) Release(ctx context.Context, ref spec.HTMLRef) error { return Release(ctx, s.RDB, ref) }
