package htmlstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testsupport"
)

// TestPutGetRelease: two exports of one document share one compressed copy;
// it goes with the last reference; a missing or tampered copy is an error,
// never an empty document.
func TestPutGetRelease(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	ctx := context.Background()
	html := "<!doctype html><p>" + strings.Repeat("a manual, ", 20000)
	a, err := Put(ctx, rdb, html, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Put(ctx, rdb, html, time.Hour)
	if err != nil || a != b {
		t.Fatalf("second Put = %+v, %v; want the same reference %+v", b, err, a)
	}
	if keys := rdb.Keys(ctx, "pdfexport:html:*").Val(); len(keys) != 1 {
		t.Fatalf("keys %v: want one shared copy", keys)
	}
	if size := rdb.MemoryUsage(ctx, key(a.SHA256)).Val(); size > int64(len(html))/4 {
		t.Errorf("the copy takes %d bytes of Redis for a %d-byte document: not compressed", size, len(html))
	}
	got, err := Get(ctx, rdb, a)
	if err != nil || got != html {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	if err := Release(ctx, rdb, a); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, rdb, a); err != nil {
		t.Fatalf("after one of two Releases: %v", err)
	}
	if err := Release(ctx, rdb, b); err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, rdb, a); !errors.Is(err, ErrMissing) {
		t.Fatalf("after the last Release: %v, want ErrMissing", err)
	}
	if err := Release(ctx, rdb, a); err != nil {
		t.Errorf("Release of a gone copy: %v", err)
	}

	// A copy whose content does not match its reference is refused.
	c, err := Put(ctx, rdb, html, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := Put(ctx, rdb, "<p>other", time.Hour)
	data := rdb.HGet(ctx, key(other.SHA256), "data").Val()
	rdb.HSet(ctx, key(c.SHA256), "data", data)
	if _, err := Get(ctx, rdb, c); err == nil || errors.Is(err, ErrMissing) {
		t.Errorf("Get of a tampered copy = %v, want a digest error", err)
	}
}

// TestPut_TTLIsRenewed: every Put keeps the copy at least its TTL.
func TestPut_TTLIsRenewed(t *testing.T) {
	srv := testsupport.StartRedis(t)
	rdb := srv.Client()
	ctx := context.Background()
	ref, _ := Put(ctx, rdb, "<p>x", time.Minute)
	if ttl := rdb.PTTL(ctx, key(ref.SHA256)).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL %v after Put with 1m", ttl)
	}
	_, _ = Put(ctx, rdb, "<p>x", time.Hour)
	if ttl := rdb.PTTL(ctx, key(ref.SHA256)).Val(); ttl < 59*time.Minute {
		t.Fatalf("TTL %v after a second Put with 1h", ttl)
	}
}
