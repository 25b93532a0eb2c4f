package sidestore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestPutGetRelease: two exports of one document share one compressed copy;
// it goes with the last reference; a missing or tampered copy is an error,
// never an empty document.
func TestPutGetRelease(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	ctx := context.Background()
	html := "<!doctype html><p>" + strings.Repeat("a manual, ", 20000)
	a, err := store(rdb).PutHTML(ctx, "task-a", html, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store(rdb).PutHTML(ctx, "task-b", html, time.Hour)
	if err != nil || a != b {
		t.Fatalf("second Put = %+v, %v; want the same reference %+v", b, err, a)
	}
	if keys := rdb.Keys(ctx, "pdfexport:html:*").Val(); len(keys) != 1 {
		t.Fatalf("keys %v: want one shared copy", keys)
	}
	if size := rdb.MemoryUsage(ctx, keyspace.HTML(a.SHA256)).Val(); size > int64(len(html))/4 {
		t.Errorf("the copy takes %d bytes of Redis for a %d-byte document: not compressed", size, len(html))
	}
	got, err := getHTML(ctx, rdb, "task-a", a)
	if err != nil || got != html {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	if ok, err := releaseOne(ctx, store(rdb), "task-a", Ref{HTML: &a}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := releaseOne(ctx, store(rdb), "task-a", Ref{HTML: &a}); err != nil || ok {
		t.Fatalf("a second Release by the same task = %v, %v: want nothing released", ok, err)
	}
	if _, err := getHTML(ctx, rdb, "task-b", b); err != nil {
		t.Fatalf("after one of two owners released: %v", err)
	}
	if _, err := getHTML(ctx, rdb, "task-a", a); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("a task that released reads it again: %v, want ErrNotOwner", err)
	}
	if ok, err := releaseOne(ctx, store(rdb), "task-b", Ref{HTML: &b}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := getHTML(ctx, rdb, "task-b", a); !errors.Is(err, ErrMissing) {
		t.Fatalf("after the last Release: %v, want ErrMissing", err)
	}
	if ok, err := releaseOne(ctx, store(rdb), "task-a", Ref{HTML: &a}); err != nil || ok {
		t.Errorf("Release of a gone copy = %v, %v", ok, err)
	}

	// A copy whose content does not match its reference is refused.
	c, err := store(rdb).PutHTML(ctx, "task-c", html, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := store(rdb).PutHTML(ctx, "task-o", "<p>other", time.Hour)
	data := rdb.HGet(ctx, keyspace.HTML(other.SHA256), "data").Val()
	rdb.HSet(ctx, keyspace.HTML(c.SHA256), "data", data)
	if _, err := getHTML(ctx, rdb, "task-c", c); err == nil || errors.Is(err, ErrMissing) || errors.Is(err, ErrNotOwner) {
		t.Errorf("Get of a tampered copy = %v, want a digest error", err)
	}
}

// TestPut_TTLIsRenewed: every Put keeps the copy at least its TTL.
func TestPut_TTLIsRenewed(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	ctx := context.Background()
	ref, _ := store(rdb).PutHTML(ctx, "t1", "<p>x", time.Minute)
	if ttl := rdb.PTTL(ctx, keyspace.HTML(ref.SHA256)).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL %v after Put with 1m", ttl)
	}
	_, _ = store(rdb).PutHTML(ctx, "t2", "<p>x", time.Hour)
	if ttl := rdb.PTTL(ctx, keyspace.HTML(ref.SHA256)).Val(); ttl < 59*time.Minute {
		t.Fatalf("TTL %v after a second Put with 1h", ttl)
	}
}

// TestDocument_BelongsToItsOwners: a task that names a document it did not
// store (a forged reference) neither reads it nor takes it away from its
// owner.
func TestDocument_BelongsToItsOwners(t *testing.T) {
	rdb := testsupport.StartRedis(t).Client()
	ctx := context.Background()
	ref, err := store(rdb).PutHTML(ctx, "owner", "<p>the owner's manual", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := getHTML(ctx, rdb, "thief", ref); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Get by another task: %v, want ErrNotOwner", err)
	}
	for range 3 {
		if ok, err := releaseOne(ctx, store(rdb), "thief", Ref{HTML: &ref}); err != nil || ok {
			t.Fatalf("Release by another task = %v, %v", ok, err)
		}
	}
	if html, err := getHTML(ctx, rdb, "owner", ref); err != nil || html != "<p>the owner's manual" {
		t.Fatalf("the owner's Get after the thief's releases: %q, %v", html, err)
	}
}

// TestSweepOwners_Grace: an owner asynq does not have is dropped only once
// it has been one for the grace period (an enqueuer puts the document
// before it enqueues the task); an owner asynq has stays; the document goes
// with its last owner.
func TestSweepOwners_Grace(t *testing.T) {
	rdb := testsupport.StartRedis(t).Client()
	ctx := context.Background()
	ref, err := store(rdb).PutHTML(ctx, "queued", "<p>a manual", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store(rdb).PutHTML(ctx, "put-not-yet-enqueued", "<p>a manual", time.Hour); err != nil {
		t.Fatal(err)
	}
	inAsynq := map[string]bool{"queued": true}
	exists := func(_ context.Context, ids []string) (map[string]bool, error) {
		out := map[string]bool{}
		for _, id := range ids {
			out[id] = inAsynq[id]
		}
		return out, nil
	}
	const grace = 300 * time.Millisecond
	for _, step := range []struct {
		name     string
		sleep    time.Duration
		dropped  int
		owners   []string
		noLonger string // a task asynq drops before the pass
	}{
		{"within the grace period nothing goes", 0, 0, []string{"queued", "put-not-yet-enqueued"}, ""},
		{"past it, the owner never enqueued goes", grace + grace/2, 1, []string{"queued"}, ""},
		{"the last owner deleted from the dashboard: the document goes", 0, 1, nil, "queued"},
	} {
		time.Sleep(step.sleep)
		delete(inAsynq, step.noLonger)
		n, err := SweepOwners(ctx, rdb, exists, 0, grace, 100)
		if err != nil || n != step.dropped {
			t.Fatalf("%s: dropped %d, %v; want %d", step.name, n, err, step.dropped)
		}
		var owners []string
		for _, f := range rdb.HKeys(ctx, keyspace.HTML(ref.SHA256)).Val() {
			if id, ok := strings.CutPrefix(f, "o:"); ok {
				owners = append(owners, id)
			}
		}
		slices.Sort(owners)
		want := slices.Sorted(slices.Values(step.owners))
		if !slices.Equal(owners, want) {
			t.Errorf("%s: owners %v, want %v", step.name, owners, want)
		}
		if got := rdb.HGet(ctx, keyspace.HTML(ref.SHA256), "owners").Val(); len(want) > 0 && got != strconv.Itoa(len(want)) {
			t.Errorf("%s: owners count %q, want %d", step.name, got, len(want))
		}
	}
	if rdb.Exists(ctx, keyspace.HTML(ref.SHA256)).Val() != 0 {
		t.Error("the document outlived its last owner")
	}
}

// TestDocument_ANewerFormatIsLeftAlone: a document hash a later release
// wrote in a newer format ("fmt" 2, here with a count this build does not
// know the meaning of) is refused by every operation of this build
// (ErrNewerFormat) and left exactly as it was: after a rollback, this
// build's release or sweep never deletes a document other exports of the
// later release still need.
func TestDocument_ANewerFormatIsLeftAlone(t *testing.T) {
	rdb := testsupport.StartRedis(t).Client()
	ctx := context.Background()
	html := "<p>stored by a later release"
	ref, _ := store(rdb).PutHTML(ctx, "tmp", html, time.Hour)
	data := rdb.HGet(ctx, keyspace.HTML(ref.SHA256), "data").Val()
	rdb.Del(ctx, keyspace.HTML(ref.SHA256))
	since := strconv.FormatInt(time.Now().Add(-time.Hour).UnixMilli(), 10)
	rdb.HSet(ctx, keyspace.HTML(ref.SHA256), "data", data, "fmt", 2, "holders", 3, "o:old", since)
	rdb.Expire(ctx, keyspace.HTML(ref.SHA256), time.Hour)
	before := rdb.HGetAll(ctx, keyspace.HTML(ref.SHA256)).Val()
	for _, tc := range []struct {
		name string
		op   func() error
	}{
		{"Put", func() error { _, err := store(rdb).PutHTML(ctx, "new", html, time.Hour); return err }},
		{"Get", func() error { _, err := getHTML(ctx, rdb, "old", ref); return err }},
		{"Release", func() error { _, err := releaseOne(ctx, store(rdb), "old", Ref{HTML: &ref}); return err }},
		{"SweepOwners", func() error {
			gone := func(_ context.Context, ids []string) (map[string]bool, error) { return map[string]bool{}, nil }
			_, err := SweepOwners(ctx, rdb, gone, 0, time.Minute, 10)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if !errors.Is(err, ErrNewerFormat) || !strings.Contains(err.Error(), "format 2") {
				t.Errorf("err = %v, want ErrNewerFormat naming format 2", err)
			}
			if after := rdb.HGetAll(ctx, keyspace.HTML(ref.SHA256)).Val(); !maps.Equal(before, after) {
				t.Errorf("the hash changed: %v, was %v", after, before)
			}
		})
	}
}

// argBytes records, per Redis command, the bytes of its largest argument.
type argBytes struct {
	mu      sync.Mutex
	largest []int
}

func (*argBytes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *argBytes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		n := 0
		for _, a := range cmd.Args() {
			switch v := a.(type) {
			case string:
				n = max(n, len(v))
			case []byte:
				n = max(n, len(v))
			}
		}
		h.mu.Lock()
		h.largest = append(h.largest, n)
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (*argBytes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// sent is the largest argument of the commands since the mark.
func (h *argBytes) sentSince(mark int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Max(append([]int{0}, h.largest[mark:]...))
}

func (h *argBytes) mark() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.largest)
}

// TestPut_StoredDocumentIsClaimedNotSent: a Put of a document Redis has
// already makes the task an owner without compressing or sending the
// document again; a Put of a new one sends it; both read back.
func TestPut_StoredDocumentIsClaimedNotSent(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	t.Cleanup(func() { _ = rdb.Close() })
	hook := &argBytes{}
	rdb.AddHook(hook)
	ctx := context.Background()
	// Text that compresses about 2:1, as a real manual's markup does.
	var text strings.Builder
	for i := range 3000 {
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		text.WriteString("<p>" + hex.EncodeToString(sum[:]))
	}
	html := "<!doctype html>" + text.String()
	s := store(rdb)

	m := hook.mark()
	ref, err := s.PutHTML(ctx, "first", html, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if sent := hook.sentSince(m); sent < len(html)/4 {
		t.Fatalf("the first Put sent at most %d bytes in one argument: the document was not stored", sent)
	}
	for _, owner := range []string{"second", "third"} {
		m := hook.mark()
		if got, err := s.PutHTML(ctx, owner, html, time.Hour); err != nil || got != ref {
			t.Fatalf("Put by %s = %+v, %v", owner, got, err)
		}
		if sent := hook.sentSince(m); sent > 1024 {
			t.Errorf("Put by %s of a stored document sent an argument of %d bytes: the document again", owner, sent)
		}
	}
	for _, owner := range []string{"first", "second", "third"} {
		if got, err := getHTML(ctx, rdb, owner, ref); err != nil || got != html {
			t.Errorf("Get by %s: %d bytes, %v", owner, len(got), err)
		}
	}
	if n, _ := rdb.HGet(ctx, keyspace.HTML(ref.SHA256), "owners").Int(); n != 3 {
		t.Errorf("owners = %d, want 3", n)
	}
}

// TestCompressed_SharedByConcurrentCallers: a caller that finds the same
// document being compressed waits for that compression and takes its
// output instead of compressing it again.
func TestCompressed_SharedByConcurrentCallers(t *testing.T) {
	s := &Store{}
	html := "<p>" + strings.Repeat("x", 100)
	ref := DocumentRef(html)
	inFlight := &compression{done: make(chan struct{})}
	s.compressing = map[spec.HTMLRef]*compression{ref: inFlight}
	got := make(chan []byte, 1)
	go func() {
		data, _ := s.compressed(ref, html)
		got <- data
	}()
	select {
	case data := <-got:
		t.Fatalf("compressed returned %d bytes while the same document was being compressed", len(data))
	case <-time.After(100 * time.Millisecond):
	}
	inFlight.data = []byte("the other caller's output")
	close(inFlight.done)
	if data := <-got; string(data) != "the other caller's output" {
		t.Fatalf("compressed = %q, want the in-flight compression's output", data)
	}
	// Alone, it compresses, and forgets the document afterwards.
	delete(s.compressing, ref)
	data, err := s.compressed(ref, html)
	if err != nil || len(data) == 0 || len(s.compressing) != 0 {
		t.Fatalf("compressed alone = %d bytes, %v, %d in flight after", len(data), err, len(s.compressing))
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := io.ReadAll(zr); err != nil || string(plain) != html {
		t.Fatalf("inflated %q, %v", plain, err)
	}
}
