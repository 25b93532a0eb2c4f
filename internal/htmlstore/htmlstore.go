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
// task that never finishes (deleted from the dashboard, its worker gone for
// good) is dropped as an owner by the worker's sweep once asynq no longer
// has it (SweepOwners), and a TTL, renewed by every Put, bounds the rest.
// The hash stays bounded: an owner's field goes with its release, and the
// markers that keep a released task from claiming an anonymous reference
// exist only while there are such references. The queue Redis's persistence (AOF)
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
	"strconv"
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
// fields there are), one "o:<task>" per owner (its value: when it became
// one, unix ms; "1" from before, aged from when the sweep first sees it),
// "refs" (anonymous references stored by the previous release) and, only
// while refs is above 0, one "r:<task>" per task that released (so that it
// never claims one of them after its release); they go when refs reaches 0.
//
// indexKey is a sorted set of the documents' digests, scored by when the
// sweep last looked at them (or first Put), so that the sweep finds them
// without scanning the keyspace.
const indexKey = "pdfexport:html-index"

// Format is the format of the document hashes this build writes and
// reads: the fields above, with no "fmt" field. A later release that
// changes what a field means (the previous release's anonymous "refs"
// count is what such a change cost once: a release that did not know its
// new meaning deleted other exports' document) writes its format into
// "fmt"; every script below refuses a hash whose "fmt" is newer, leaving it
// untouched, so a rollback to this build cannot lose another export's
// document (docs/COMPATIBILITY.md, "Downgrade").
const Format = 1

// ErrNewerFormat: the document's hash is of a newer format than this
// build reads (a later release wrote it); nothing was changed. Retried,
// since a worker of that release may take the export; a release of it is
// re-driven until it succeeds or the document's TTL ends.
var ErrNewerFormat = errors.New("htmlstore: source document stored by a newer release")

// formatCheck refuses a hash of a newer format, for the scripts.
const formatCheck = `
local fmt = tonumber(redis.call("HGET", KEYS[1], "fmt") or "1")
if fmt > 1 then return redis.error_reply("PDFEXPORT_NEWER_FORMAT " .. fmt) end
`

// formatErr turns a script's refusal of a newer format into ErrNewerFormat.
func formatErr(err error, sha string) error {
	if err != nil && strings.HasPrefix(err.Error(), "PDFEXPORT_NEWER_FORMAT") {
		return fmt.Errorf("%w: sha256 %s has format %s, this build reads %d (roll forward, or let it expire with its TTL)",
			ErrNewerFormat, sha, strings.TrimPrefix(err.Error(), "PDFEXPORT_NEWER_FORMAT "), Format)
	}
	return err
}

// now is the server's clock in unix ms, for the scripts.
const now = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// putScript stores the compressed document unless it is there already and
// makes ARGV[3] an owner.
//
//	KEYS[1] the document's hash   ARGV[1] gzip data   ARGV[2] ttl in ms   ARGV[3] owner
//
// Returns the number of owners after the call.
var putScript = redis.NewScript(formatCheck + now + `
if redis.call("HEXISTS", KEYS[1], "data") == 0 then
  redis.call("HSET", KEYS[1], "data", ARGV[1])
end
if redis.call("HSETNX", KEYS[1], "o:" .. ARGV[3], now) == 1 then
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
const claim = now + `
local owner = redis.call("HEXISTS", KEYS[1], "o:" .. ARGV[1]) == 1
if not owner and redis.call("HEXISTS", KEYS[1], "r:" .. ARGV[1]) == 0 and tonumber(redis.call("HGET", KEYS[1], "refs") or "0") > 0 then
  redis.call("HSET", KEYS[1], "o:" .. ARGV[1], now)
  redis.call("HINCRBY", KEYS[1], "owners", 1)
  owner = true
  if redis.call("HINCRBY", KEYS[1], "refs", -1) <= 0 then
    -- no anonymous reference left to claim: the markers protect nothing
    for _, f in ipairs(redis.call("HKEYS", KEYS[1])) do
      if string.sub(f, 1, 2) == "r:" then redis.call("HDEL", KEYS[1], f) end
    end
  end
end
`

// getScript returns the document if ARGV[1] owns it.
//
//	KEYS[1] the document's hash   ARGV[1] the asking task
//
// Returns {0} missing, {2} other tasks', {1, data} the owner's.
var getScript = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then return {0} end
` + formatCheck + claim + `
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
` + formatCheck + claim + `
local released = 0
if owner then
  redis.call("HDEL", KEYS[1], "o:" .. ARGV[1])
  if tonumber(redis.call("HGET", KEYS[1], "refs") or "0") > 0 then
    redis.call("HSET", KEYS[1], "r:" .. ARGV[1], 1)
  end
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
		return spec.HTMLRef{}, fmt.Errorf("htmlstore: storing the source document: %w", formatErr(err, ref.SHA256))
	}
	// Indexed after (its own key, maybe another Cluster slot), so that a
	// sweep that saw the document missing and drops its entry cannot drop
	// this one (see sweepDocument); a process dying in between leaves a
	// document the sweep does not see, bounded by its TTL.
	if err := rdb.ZAddNX(ctx, indexKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: ref.SHA256}).Err(); err != nil {
		return spec.HTMLRef{}, fmt.Errorf("htmlstore: indexing the source document: %w", err)
	}
	return ref, nil
}

// Get returns the document ref names if the task owner owns it, checking its
// size and digest. It returns an error wrapping ErrMissing when Redis does
// not have it, ErrNotOwner when owner does not own it.
func Get(ctx context.Context, rdb redis.UniversalClient, owner string, ref spec.HTMLRef) (string, error) {
	res, err := getScript.Run(ctx, rdb, []string{key(ref.SHA256)}, owner).Slice()
	if err != nil {
		return "", fmt.Errorf("htmlstore: reading source sha256 %s: %w", ref.SHA256, formatErr(err, ref.SHA256))
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
		return false, fmt.Errorf("htmlstore: releasing source sha256 %s: %w", ref.SHA256, formatErr(err, ref.SHA256))
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

// dropScript drops the owners (and release markers) of tasks asynq no
// longer has, and the document with its last owner.
//
//	KEYS[1] the document's hash   ARGV[1] cutoff (unix ms): only owners
//	since before it are dropped   ARGV[2…] the tasks asynq does not have
//
// Returns the number of owners dropped. An owner of the old format ("1",
// age unknown) is given the current time instead, so it is dropped one
// grace period after the sweep first saw it.
var dropScript = redis.NewScript(now + `
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
` + formatCheck + `
local dropped = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local since = redis.call("HGET", KEYS[1], "o:" .. id)
  if since == "1" then
    redis.call("HSET", KEYS[1], "o:" .. id, now)
  elseif since and tonumber(since) < tonumber(ARGV[1]) then
    redis.call("HDEL", KEYS[1], "o:" .. id)
    redis.call("HINCRBY", KEYS[1], "owners", -1)
    dropped = dropped + 1
  end
  redis.call("HDEL", KEYS[1], "r:" .. id)
end
local left = tonumber(redis.call("HGET", KEYS[1], "owners") or "0") + tonumber(redis.call("HGET", KEYS[1], "refs") or "0")
if left <= 0 then redis.call("DEL", KEYS[1]) end
return dropped
`)

// Sweep says which of the tasks ids asynq still has (any queue, any
// state); outcome.Sweeper implements it.
type Sweep func(ctx context.Context, ids []string) (map[string]bool, error)

// SweepOwners drops, from up to batch documents not looked at for every,
// the owners that became owners more than grace ago and whose task asynq no
// longer has (deleted from the dashboard, or enqueued never: a Put whose
// enqueue failed), and the release markers of such tasks; a document goes
// with its last owner. grace covers the time between an enqueuer's Put and
// its enqueue. It returns the number of owners dropped.
func SweepOwners(ctx context.Context, rdb redis.UniversalClient, exists Sweep, every, grace time.Duration, batch int) (int, error) {
	start := time.Now()
	shas, err := rdb.ZRangeByScore(ctx, indexKey, &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(start.Add(-every).UnixMilli(), 10), Count: int64(batch)}).Result()
	if err != nil {
		return 0, fmt.Errorf("htmlstore: reading the document index: %w", err)
	}
	dropped := 0
	var errs []error
	for _, sha := range shas {
		n, err := sweepDocument(ctx, rdb, exists, sha, start.Add(-grace))
		dropped += n
		if err != nil {
			errs = append(errs, fmt.Errorf("htmlstore: sweeping source sha256 %s: %w", sha, err))
		}
	}
	return dropped, errors.Join(errs...)
}

func sweepDocument(ctx context.Context, rdb redis.UniversalClient, exists Sweep, sha string, cutoff time.Time) (int, error) {
	fields, err := rdb.HKeys(ctx, key(sha)).Result()
	if err != nil {
		return 0, err
	}
	if len(fields) == 0 { // gone with its last owner, or its TTL
		if err := rdb.ZRem(ctx, indexKey, sha).Err(); err != nil {
			return 0, err
		}
		// Put again meanwhile (its own entry may have been the one just
		// removed): index it again.
		if n, err := rdb.Exists(ctx, key(sha)).Result(); err != nil || n == 0 {
			return 0, err
		}
		return 0, rdb.ZAddNX(ctx, indexKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: sha}).Err()
	}
	seen := map[string]bool{}
	var ids []string
	for _, f := range fields {
		if id, ok := strings.CutPrefix(f, "o:"); ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		} else if id, ok := strings.CutPrefix(f, "r:"); ok && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	n := 0
	if len(ids) > 0 {
		have, err := exists(ctx, ids)
		if err != nil {
			return 0, err
		}
		args := []any{cutoff.UnixMilli()}
		for _, id := range ids {
			if !have[id] {
				args = append(args, id)
			}
		}
		if len(args) > 1 {
			if n, err = dropScript.Run(ctx, rdb, []string{key(sha)}, args...).Int(); err != nil {
				return 0, formatErr(err, sha)
			}
		}
	}
	return n, rdb.ZAddXX(ctx, indexKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: sha}).Err()
}
