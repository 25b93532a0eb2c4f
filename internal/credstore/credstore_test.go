package credstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestStore_IdentityIsKeyedStableAndPrivate: two processes (two Stores on
// one Redis) give the same credentials the same identity whatever the
// header case or cookie order; other credentials get another; the
// identity is not a plain hash of the credentials (the key lives in Redis).
func TestStore_IdentityIsKeyedStableAndPrivate(t *testing.T) {
	redis := testsupport.StartRedis(t)
	ctx := context.Background()
	a, b := &Store{RDB: redis.Client()}, &Store{RDB: redis.Client()}
	alice := spec.Credentials{Headers: map[string]string{"authorization": "Bearer A"}, Cookies: []spec.Cookie{{Name: "sid", Value: "1"}, {Name: "lang", Value: "en"}}}
	aliceAgain := spec.Credentials{Headers: map[string]string{"Authorization": "Bearer A"}, Cookies: []spec.Cookie{{Name: "lang", Value: "en", Path: "/"}, {Name: "sid", Value: "1"}}}
	bob := spec.Credentials{Headers: map[string]string{"Authorization": "Bearer B"}, Cookies: alice.Cookies}
	r1, err := a.Put(ctx, "task-1", alice, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.Put(ctx, "task-2", aliceAgain, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := b.Put(ctx, "task-3", bob, time.Minute)
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

	got, err := b.Get(ctx, "task-1", r1)
	if err != nil || got.Headers["Authorization"] != "Bearer A" || len(got.Cookies) != 2 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	forged := r3
	forged.Identity = r1.Identity // bob's credentials claiming alice's artifact
	if _, err := a.Get(ctx, "task-3", forged); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("a reference claiming another identity: %v", err)
	}
	if ok, err := a.Release(ctx, "task-1", r1); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := a.Get(ctx, "task-1", r1); !errors.Is(err, ErrMissing) {
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
	c := spec.Credentials{Headers: map[string]string{"Authorization": "Bearer A"}}
	before, err := worker.Put(ctx, "t1", c, time.Minute) // the worker has read the key
	if err != nil {
		t.Fatal(err)
	}
	if err := redis.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	after, err := (&Store{RDB: redis.Client()}).Put(ctx, "t2", c, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if after.Identity == before.Identity {
		t.Fatal("the flush did not change the key; the test proves nothing")
	}
	if _, err := worker.Get(ctx, "t2", after); err != nil {
		t.Fatalf("Get after the key changed: %v", err)
	}
	// And a long-lived enqueuer hashes under the key Redis has now.
	enqueuer := &Store{RDB: redis.Client()}
	if _, err := enqueuer.Put(ctx, "t3", c, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := redis.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	ref, err := enqueuer.Put(ctx, "t4", c, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Store{RDB: redis.Client()}).Get(ctx, "t4", ref); err != nil {
		t.Fatalf("a fresh worker reading what a long-lived enqueuer stored after the flush: %v", err)
	}
}

// TestStore_CredentialsBelongToTheirTask: another task naming the
// credentials (a forged reference: the victim's id and identity) neither
// reads nor deletes them; the owner does, once.
func TestStore_CredentialsBelongToTheirTask(t *testing.T) {
	redis := testsupport.StartRedis(t)
	ctx := context.Background()
	s := &Store{RDB: redis.Client()}
	victim, err := s.Put(ctx, "victim", spec.Credentials{Headers: map[string]string{"Authorization": "Bearer V"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if victim.ID != "victim" {
		t.Fatalf("reference id %q, want the owner's task id", victim.ID)
	}
	if c, err := s.Get(ctx, "thief", victim); !errors.Is(err, ErrNotOwner) || !c.Empty() {
		t.Fatalf("another task's Get = %+v, %v; want ErrNotOwner and nothing", c, err)
	}
	if ok, err := s.Release(ctx, "thief", victim); err != nil || ok {
		t.Fatalf("another task's Release = %v, %v; want nothing deleted", ok, err)
	}
	if c, err := s.Get(ctx, "victim", victim); err != nil || c.Headers["Authorization"] != "Bearer V" {
		t.Fatalf("the owner's Get = %+v, %v", c, err)
	}
	if ok, err := s.Release(ctx, "victim", victim); err != nil || !ok {
		t.Fatalf("the owner's Release = %v, %v", ok, err)
	}
	if ok, err := s.Release(ctx, "victim", victim); err != nil || ok {
		t.Fatalf("a second Release = %v, %v; want nothing", ok, err)
	}
	if n := redis.Client().Exists(ctx, key("victim")).Val(); n != 0 {
		t.Fatal("the credentials are still in Redis")
	}
}

// TestStore_ClaimsWhatThePreviousReleaseStored: credentials stored as a plain
// value (the previous release, no owner) still serve the task queued with
// them, which claims them; from then on they are that task's.
func TestStore_ClaimsWhatThePreviousReleaseStored(t *testing.T) {
	redis := testsupport.StartRedis(t)
	ctx := context.Background()
	s := &Store{RDB: redis.Client()}
	c := spec.Credentials{Headers: map[string]string{"Authorization": "Bearer L"}}
	ident, err := s.identity(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	legacy := spec.CredentialsRef{ID: "0123456789abcdef0123456789abcdef", Identity: ident, HeaderNames: []string{"Authorization"}}
	if err := redis.Client().Set(ctx, key(legacy.ID), `{"headers":{"Authorization":"Bearer L"}}`, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "queued-before", legacy); err != nil || got.Headers["Authorization"] != "Bearer L" {
		t.Fatalf("Get of a legacy value = %+v, %v", got, err)
	}
	if ttl := redis.Client().PTTL(ctx, key(legacy.ID)).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("TTL after the claim %v, want the original hour at most", ttl)
	}
	if _, err := s.Get(ctx, "another", legacy); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("after the claim another task reads it: %v", err)
	}
	if ok, err := s.Release(ctx, "queued-before", legacy); err != nil || !ok {
		t.Fatalf("Release by the claimant = %v, %v", ok, err)
	}
}
