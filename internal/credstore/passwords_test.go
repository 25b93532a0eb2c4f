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
	if owner := redis.Client().HGet(ctx, passwordsKey("task-1"), "owner").Val(); owner != "task-1" {
		t.Fatalf("owner field = %q", owner)
	}
	if ttl := redis.Client().TTL(ctx, passwordsKey("task-1")).Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("TTL %v", ttl)
	}
	if _, err := s.GetPasswords(ctx, "task-2", r1); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("another task's Get: %v, want ErrNotOwner", err)
	}
	if ok, err := s.ReleasePasswords(ctx, "task-2", r1); ok || err != nil {
		t.Fatalf("another task's Release: %v %v, want nothing released", ok, err)
	}
	got, err := s.GetPasswords(ctx, "task-1", r1)
	if err != nil || got != pw {
		t.Fatalf("owner's Get = %+v, %v", got, err)
	}
	forged := r3
	forged.Identity = r1.Identity
	if _, err := s.GetPasswords(ctx, "task-3", forged); err == nil {
		t.Fatal("a reference claiming another identity was accepted")
	}
	if ok, err := s.ReleasePasswords(ctx, "task-1", r1); !ok || err != nil {
		t.Fatalf("owner's Release: %v %v", ok, err)
	}
	if ok, _ := s.ReleasePasswords(ctx, "task-1", r1); ok {
		t.Fatal("a second Release deleted something")
	}
	if _, err := s.GetPasswords(ctx, "task-1", r1); !errors.Is(err, ErrMissing) {
		t.Fatalf("after Release: %v, want ErrMissing", err)
	}
}
