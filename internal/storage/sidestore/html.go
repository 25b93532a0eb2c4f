package sidestore

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

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// The document kind: a large inline HTML document stored gzip-compressed
// under its SHA-256 ("pdfexport:html:{<hex>}", the shared layout), so two
// exports of the same document share one copy. A task that never finishes
// (deleted from the dashboard, its worker gone for good) is dropped as an
// owner by the worker's sweep once asynq no longer has it (SweepOwners), and
// a TTL, renewed by every PutHTML, bounds the rest.

// HTMLThreshold is the size from which exportclient sends an inline
// document by reference: smaller ones cost less in the task than a second
// key.
const HTMLThreshold = 32 << 10

// DefaultTTL bounds how long a document outlives its last PutHTML when no
// Release comes: longer than any queue backlog plus every retry of a task
// should last (MAX_RETRY attempts of at most TASK_TIMEOUT each, with
// backoff).
const DefaultTTL = spec.DefaultSourceTTL

// keyspace.HTMLIndex is a sorted set of the documents' digests, scored by
// when the sweep last looked at them (or first PutHTML), so that the sweep
// finds them without scanning the keyspace.

// now is the server's clock in unix ms, for the scripts.
const now = `
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// putScript stores the compressed document unless it is there already and
// makes ARGV[3] an owner. Without data (ARGV[1] empty: gzip output never
// is) it only claims a document stored already, and answers -1, changing
// nothing, when there is none: the caller compresses and sends it then.
//
//	KEYS[1] the document's hash   ARGV[1] gzip data, or ""   ARGV[2] ttl in ms   ARGV[3] owner
//
// Returns the number of owners after the call, or -1.
var putScript = redis.NewScript(formatCheck + now + `
if redis.call("HEXISTS", KEYS[1], "data") == 0 then
  if ARGV[1] == "" then return -1 end
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

// DocumentRef returns the reference of a document.
func DocumentRef(html string) spec.HTMLRef {
	sum := sha256.Sum256([]byte(html))
	return spec.HTMLRef{SHA256: hex.EncodeToString(sum[:]), Bytes: len(html)}
}

// PutHTML stores html (compressed) if it is not stored yet, makes the task
// owner one of its owners and keeps it at least ttl (0: DefaultTTL). It
// returns the reference the task's envelope names.
func (s *Store) PutHTML(ctx context.Context, owner, html string, ttl time.Duration) (spec.HTMLRef, error) {
	if owner == "" {
		return spec.HTMLRef{}, errors.New("sidestore: PutHTML needs the owning task's id")
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	ref := DocumentRef(html)
	r := Ref{HTML: &ref}
	// A document stored already (a popular manual exported by many) is
	// claimed without compressing or sending it again.
	owners, err := putScript.Run(ctx, s.RDB, []string{r.key()}, "", ttl.Milliseconds(), owner).Int()
	if err == nil && owners < 0 {
		var data []byte
		if data, err = s.compressed(ref, html); err != nil {
			return spec.HTMLRef{}, err
		}
		err = putScript.Run(ctx, s.RDB, []string{r.key()}, data, ttl.Milliseconds(), owner).Err()
	}
	if err != nil {
		return spec.HTMLRef{}, fmt.Errorf("sidestore: storing the %s: %w", r, formatErr(err, r.String()))
	}
	// Indexed after (its own key, maybe another Cluster slot), so that a
	// sweep that saw the document missing and drops its entry cannot drop
	// this one (see sweepDocument); a process dying in between leaves a
	// document the sweep does not see, bounded by its TTL.
	if err := s.RDB.ZAddNX(ctx, keyspace.HTMLIndex, redis.Z{Score: float64(time.Now().UnixMilli()), Member: ref.SHA256}).Err(); err != nil {
		return spec.HTMLRef{}, fmt.Errorf("sidestore: indexing the %s: %w", r, err)
	}
	return ref, nil
}

// compressed is html gzip-compressed. Callers compressing the same
// document at the same time (a burst of exports of a new document, each
// finding it not stored yet) share one compression.
func (s *Store) compressed(ref spec.HTMLRef, html string) ([]byte, error) {
	s.mu.Lock()
	if s.compressing == nil {
		s.compressing = map[spec.HTMLRef]*compression{}
	}
	if c, ok := s.compressing[ref]; ok {
		s.mu.Unlock()
		<-c.done
		return c.data, c.err
	}
	c := &compression{done: make(chan struct{})}
	s.compressing[ref] = c
	s.mu.Unlock()

	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // a few times smaller for HTML at a modest CPU cost
	_, _ = io.WriteString(zw, html)
	c.err = zw.Close()
	c.data = buf.Bytes()

	s.mu.Lock()
	delete(s.compressing, ref)
	s.mu.Unlock()
	close(c.done)
	return c.data, c.err
}

// compression is one document being compressed, for the callers that wait
// for it.
type compression struct {
	done chan struct{}
	data []byte
	err  error
}

// decodeHTML inflates a stored document and checks it against ref.
func decodeHTML(ref spec.HTMLRef, data string) (string, error) {
	zr, err := gzip.NewReader(strings.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("sidestore: source sha256 %s: %w", ref.SHA256, err)
	}
	// At most one byte more than the reference says: a corrupt or hostile
	// value cannot make the worker inflate gigabytes.
	html, err := io.ReadAll(io.LimitReader(zr, int64(ref.Bytes)+1))
	if err != nil {
		return "", fmt.Errorf("sidestore: source sha256 %s: %w", ref.SHA256, err)
	}
	if got := DocumentRef(string(html)); got != ref {
		return "", fmt.Errorf("sidestore: source sha256 %s: stored document has sha256 %s and %d bytes, not %d", ref.SHA256, got.SHA256, got.Bytes, ref.Bytes)
	}
	return string(html), nil
}

// dropScript drops the owners of tasks asynq no longer has, and the
// document with its last owner.
//
//	KEYS[1] the document's hash   ARGV[1] cutoff (unix ms): only owners
//	since before it are dropped   ARGV[2…] the tasks asynq does not have
//
// Returns the number of owners dropped.
var dropScript = redis.NewScript(`
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
` + formatCheck + `
local dropped = 0
for i = 2, #ARGV do
  local since = redis.call("HGET", KEYS[1], "o:" .. ARGV[i])
  if since and tonumber(since) < tonumber(ARGV[1]) then
    redis.call("HDEL", KEYS[1], "o:" .. ARGV[i])
    redis.call("HINCRBY", KEYS[1], "owners", -1)
    dropped = dropped + 1
  end
end
if tonumber(redis.call("HGET", KEYS[1], "owners") or "0") <= 0 then redis.call("DEL", KEYS[1]) end
return dropped
`)

// Sweep says which of the tasks ids asynq still has (any queue, any
// state); outcome.Sweeper implements it.
type Sweep func(ctx context.Context, ids []string) (map[string]bool, error)

// SweepOwners drops, from up to batch documents not looked at for every,
// the owners that became owners more than grace ago and whose task asynq no
// longer has (deleted from the dashboard, or enqueued never: a PutHTML
// whose enqueue failed); a document goes with its last owner. grace covers
// the time between an enqueuer's PutHTML and its enqueue. It returns the
// number of owners dropped. The secret kinds need no sweep: one owner each,
// and their TTL is SOURCE_TTL.
func SweepOwners(ctx context.Context, rdb redis.UniversalClient, exists Sweep, every, grace time.Duration, batch int) (int, error) {
	start := time.Now()
	shas, err := rdb.ZRangeByScore(ctx, keyspace.HTMLIndex, &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(start.Add(-every).UnixMilli(), 10), Count: int64(batch)}).Result()
	if err != nil {
		return 0, fmt.Errorf("sidestore: reading the document index: %w", err)
	}
	dropped := 0
	var errs []error
	for _, sha := range shas {
		n, err := sweepDocument(ctx, rdb, exists, sha, start.Add(-grace))
		dropped += n
		if err != nil {
			errs = append(errs, fmt.Errorf("sidestore: sweeping source sha256 %s: %w", sha, err))
		}
	}
	return dropped, errors.Join(errs...)
}

func sweepDocument(ctx context.Context, rdb redis.UniversalClient, exists Sweep, sha string, cutoff time.Time) (int, error) {
	fields, err := rdb.HKeys(ctx, keyspace.HTML(sha)).Result()
	if err != nil {
		return 0, err
	}
	if len(fields) == 0 { // gone with its last owner, or its TTL
		if err := rdb.ZRem(ctx, keyspace.HTMLIndex, sha).Err(); err != nil {
			return 0, err
		}
		// Put again meanwhile (its own entry may have been the one just
		// removed): index it again.
		if n, err := rdb.Exists(ctx, keyspace.HTML(sha)).Result(); err != nil || n == 0 {
			return 0, err
		}
		return 0, rdb.ZAddNX(ctx, keyspace.HTMLIndex, redis.Z{Score: float64(time.Now().UnixMilli()), Member: sha}).Err()
	}
	var ids []string
	for _, f := range fields {
		if id, ok := strings.CutPrefix(f, "o:"); ok {
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
			if n, err = dropScript.Run(ctx, rdb, []string{keyspace.HTML(sha)}, args...).Int(); err != nil {
				return 0, formatErr(err, "source document sha256 "+sha)
			}
		}
	}
	return n, rdb.ZAddXX(ctx, keyspace.HTMLIndex, redis.Z{Score: float64(time.Now().UnixMilli()), Member: sha}).Err()
}
