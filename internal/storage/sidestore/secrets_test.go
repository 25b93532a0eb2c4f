package sidestore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
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
	r1, err := a.PutCredentials(ctx, "task-1", alice, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.PutCredentials(ctx, "task-2", aliceAgain, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := b.PutCredentials(ctx, "task-3", bob, time.Minute)
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
	if id, _ := unkeyed.identity(ctx, alice.IdentityBytes()); id == r1.Identity {
		t.Error("the identity does not depend on the Redis-held key")
	}

	got, err := getCredentials(ctx, b, "task-1", r1)
	if err != nil || got.Headers["Authorization"] != "Bearer A" || len(got.Cookies) != 2 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	forged := r3
	forged.Identity = r1.Identity // bob's credentials claiming alice's artifact
	if _, err := getCredentials(ctx, a, "task-3", forged); err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("a reference claiming another identity: %v", err)
	}
	if ok, err := releaseOne(ctx, a, "task-1", Ref{Credentials: &r1}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := getCredentials(ctx, a, "task-1", r1); !errors.Is(err, ErrMissing) {
		t.Errorf("after Release: %v, want ErrMissing", err)
	}
	if ttl := redis.Client().TTL(ctx, keyspace.Credentials(r2.ID)).Val(); ttl <= 0 || ttl > time.Minute {
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
	before, err := worker.PutCredentials(ctx, "t1", c, time.Minute) // the worker has read the key
	if err != nil {
		t.Fatal(err)
	}
	if err := redis.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	after, err := (&Store{RDB: redis.Client()}).PutCredentials(ctx, "t2", c, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if after.Identity == before.Identity {
		t.Fatal("the flush did not change the key; the test proves nothing")
	}
	if _, err := getCredentials(ctx, worker, "t2", after); err != nil {
		t.Fatalf("Get after the key changed: %v", err)
	}
	// And a long-lived enqueuer hashes under the key Redis has now.
	enqueuer := &Store{RDB: redis.Client()}
	if _, err := enqueuer.PutCredentials(ctx, "t3", c, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := redis.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	ref, err := enqueuer.PutCredentials(ctx, "t4", c, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := getCredentials(ctx, &Store{RDB: redis.Client()}, "t4", ref); err != nil {
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
	victim, err := s.PutCredentials(ctx, "victim", spec.Credentials{Headers: map[string]string{"Authorization": "Bearer V"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if victim.ID != "victim" {
		t.Fatalf("reference id %q, want the owner's task id", victim.ID)
	}
	if c, err := getCredentials(ctx, s, "thief", victim); !errors.Is(err, ErrNotOwner) || !c.Empty() {
		t.Fatalf("another task's Get = %+v, %v; want ErrNotOwner and nothing", c, err)
	}
	if ok, err := releaseOne(ctx, s, "thief", Ref{Credentials: &victim}); err != nil || ok {
		t.Fatalf("another task's Release = %v, %v; want nothing deleted", ok, err)
	}
	if c, err := getCredentials(ctx, s, "victim", victim); err != nil || c.Headers["Authorization"] != "Bearer V" {
		t.Fatalf("the owner's Get = %+v, %v", c, err)
	}
	if ok, err := releaseOne(ctx, s, "victim", Ref{Credentials: &victim}); err != nil || !ok {
		t.Fatalf("the owner's Release = %v, %v", ok, err)
	}
	if ok, err := releaseOne(ctx, s, "victim", Ref{Credentials: &victim}); err != nil || ok {
		t.Fatalf("a second Release = %v, %v; want nothing", ok, err)
	}
	if n := redis.Client().Exists(ctx, keyspace.Credentials("victim")).Val(); n != 0 {
		t.Fatal("the credentials are still in Redis")
	}
}

// TestPasswords_OwnedKeyedAndReleased: an encryption's passwords are kept
// like credentials: under the task's id, owned by it ({owner, data}), read
// and released only by that task, with a keyed identity that is the same
// for the same passwords, differs from credentials' under the same key and
// reveals nothing without the Redis-held key.
func TestPasswords_OwnedKeyedAndReleased(t *testing.T) {
	redis := testsupport.StartRedis(t)
	ctx := context.Background()
	s := &Store{RDB: redis.Client()}
	pw := spec.Passwords{User: "reader-pw", Owner: "owner-pw"}
	r1, err := s.PutPasswords(ctx, "task-1", pw, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := (&Store{RDB: redis.Client()}).PutPasswords(ctx, "task-2", pw, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := s.PutPasswords(ctx, "task-3", spec.Passwords{Owner: "owner-pw"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r1.ID != "task-1" || r1.Identity != r2.Identity || r1.Identity == r3.Identity || len(r1.Identity) != 64 {
		t.Fatalf("refs %+v %+v %+v", r1, r2, r3)
	}
	if strings.Contains(r1.Identity, "pw") {
		t.Fatal("identity shows the password")
	}
	if owner := redis.Client().HGet(ctx, keyspace.Passwords("task-1"), "owner").Val(); owner != "task-1" {
		t.Fatalf("owner field = %q", owner)
	}
	if ttl := redis.Client().TTL(ctx, keyspace.Passwords("task-1")).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL %v", ttl)
	}
	if _, err := getPasswords(ctx, s, "task-2", r1); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("another task's Get: %v, want ErrNotOwner", err)
	}
	if ok, err := releaseOne(ctx, s, "task-2", Ref{Passwords: &r1}); ok || err != nil {
		t.Fatalf("another task's Release: %v %v, want nothing released", ok, err)
	}
	got, err := getPasswords(ctx, s, "task-1", r1)
	if err != nil || got != pw {
		t.Fatalf("owner's Get = %+v, %v", got, err)
	}
	forged := r3
	forged.Identity = r1.Identity
	if _, err := getPasswords(ctx, s, "task-3", forged); err == nil {
		t.Fatal("a reference claiming another identity was accepted")
	}
	if ok, err := releaseOne(ctx, s, "task-1", Ref{Passwords: &r1}); !ok || err != nil {
		t.Fatalf("owner's Release: %v %v", ok, err)
	}
	if ok, _ := releaseOne(ctx, s, "task-1", Ref{Passwords: &r1}); ok {
		t.Fatal("a second Release deleted something")
	}
	if _, err := getPasswords(ctx, s, "task-1", r1); !errors.Is(err, ErrMissing) {
		t.Fatalf("after Release: %v, want ErrMissing", err)
	}
}
