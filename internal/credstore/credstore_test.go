package credstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testsupport"
)

// TestStore_IdentityIsKeyedStableAndPrivate: two processes (two Stores on
// one Redis) give the same credentials the same identity whatever the
// header case or cookie order; other credentials get another; the
// identity is not a plain hash of the credentials (the key lives in Redis).
func TestStore_IdentityIsKeyedStableAndPrivate(t *testing.T) {
	redis := testsupport.StartRedis(t)
	ctx := context.Background()
	a, b := &Store{RDB: redis.Client()}, &Store{RDB: redis.Client()}
	alice := Credentials{Headers: map[string]string{"authorization": "Bearer A"}, Cookies: []spec.Cookie{{Name: "sid", Value: "1"}, {Name: "lang", Value: "en"}}}
	aliceAgain := Credentials{Headers: map[string]string{"Authorization": "Bearer A"}, Cookies: []spec.Cookie{{Name: "lang", Value: "en", Path: "/"}, {Name: "sid", Value: "1"}}}
	bob := Credentials{Headers: map[string]string{"Authorization": "Bearer B"}, Cookies: alice.Cookies}
	r1, err := a.Put(ctx, alice, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Put(ctx, aliceAgain, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := b.Put(ctx, bob, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Identity != r2.Identity || r1.Identity == r3.Identity || r1.ID == r2.ID {
		t.Errorf("identities alice %s, alice again %s, bob %s (ids %s %s)", r1.Identity, r2.Identity, r3.Identity, r1.ID, r2.ID)
	}
	if strings.Join(r1.HeaderNames, ",") != "Authorization" || strings.Join(r1.CookieNames, ",") != "sid,lang" {
		t.Errorf("names %v %v", r1.HeaderNames, r1.CookieNames)
	}
	unkeyed := &Store{RDB: redis.Client(), hmacKey: make([]byte, 32)}
	if id, _ := unkeyed.identity(ctx, alice); id == r1.Identity {
		t.Error("the identity does not depend on the Redis-held key")
	}

	got, err := b.Get(ctx, r1)
	if err != nil || got.Headers["authorization"] != "Bearer A" || len(got.Cookies) != 2 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	forged := r3
	forged.Identity = r1.Identity // bob's credentials claiming alice's artifact
	if _, err := a.Get(ctx, forged); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("a reference claiming another identity: %v", err)
	}
	if err := a.Release(ctx, r1); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, r1); !errors.Is(err, ErrMissing) {
		t.Errorf("after Release: %v, want ErrMissing", err)
	}
	if ttl := redis.Client().TTL(ctx, key(r2.ID)).Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("TTL %v, want at most a minute", ttl)
	}
}

// TestStore_FollowsANewKey: after the identity key in Redis is replaced (a
// flushed Redis), a long-running worker still reads credentials that a
// fresh enqueuer stored under the new key.
func TestStore_FollowsANewKey(t *testing.T) {
	redis := testsupport.StartRedis(t)
	ctx := context.Background()
	worker := &Store{RDB: redis.Client()}
	c := Credentials{Headers: map[string]string{"Authorization": "Bearer A"}}
	before, err := worker.Put(ctx, c, time.Minute) // the worker has read the key
	if err != nil {
		t.Fatal(err)
	}
	if err := redis.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	after, err := (&Store{RDB: redis.Client()}).Put(ctx, c, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if after.Identity == before.Identity {
		t.Fatal("the flush did not change the key; the test proves nothing")
	}
	if _, err := worker.Get(ctx, after); err != nil {
		t.Fatalf("Get after the key changed: %v", err)
	}
	// And a long-lived enqueuer hashes under the key Redis has now.
	enqueuer := &Store{RDB: redis.Client()}
	if _, err := enqueuer.Put(ctx, c, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := redis.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	ref, err := enqueuer.Put(ctx, c, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Store{RDB: redis.Client()}).Get(ctx, ref); err != nil {
		t.Fatalf("a fresh worker reading what a long-lived enqueuer stored after the flush: %v", err)
	}
}
