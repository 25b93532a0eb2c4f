package sidestore

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/keyspace"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// secretsKey is a SECRETS_KEY entry of a 32-byte key made of b.
func secretsKey(b byte) string {
	return "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(b), 32)))
}

func mustKeys(t *testing.T, s string) *Keys {
	t.Helper()
	k, err := ParseKeys(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// secretKind is one sort of side-stored secret, so every test runs on both.
type secretKind struct {
	name     string
	secret   string // in the stored value; never in Redis when sealed
	redisKey func(owner string) string
	// put stores the secret for owner; get reads what ref names for owner.
	put func(ctx context.Context, s *Store, owner string) (ref any, err error)
	get func(ctx context.Context, s *Store, owner string, ref any) error
	// withID is ref naming another task's id (a moved value's reference).
	withID func(ref any, id string) any
}

var secretKinds = []secretKind{
	{
		name: "credentials", secret: "CookieSecret-4b7e", redisKey: keyspace.Credentials,
		put: func(ctx context.Context, s *Store, owner string) (any, error) {
			return s.PutCredentials(ctx, owner, spec.Credentials{Cookies: []spec.Cookie{{Name: "sid", Value: "CookieSecret-4b7e"}}}, time.Minute)
		},
		get: func(ctx context.Context, s *Store, owner string, ref any) error {
			c, err := getCredentials(ctx, s, owner, ref.(spec.CredentialsRef))
			if err == nil && (len(c.Cookies) != 1 || c.Cookies[0].Value != "CookieSecret-4b7e") {
				return errors.New("read back other credentials")
			}
			return err
		},
		withID: func(ref any, id string) any { r := ref.(spec.CredentialsRef); r.ID = id; return r },
	},
	{
		name: "passwords", secret: "UserSecret-19ac", redisKey: keyspace.Passwords,
		put: func(ctx context.Context, s *Store, owner string) (any, error) {
			return s.PutPasswords(ctx, owner, spec.Passwords{User: "UserSecret-19ac", Owner: "OwnerSecret-77d0"}, time.Minute)
		},
		get: func(ctx context.Context, s *Store, owner string, ref any) error {
			p, err := getPasswords(ctx, s, owner, ref.(spec.EncryptionRef))
			if err == nil && (p.User != "UserSecret-19ac" || p.Owner != "OwnerSecret-77d0") {
				return errors.New("read back other passwords")
			}
			return err
		},
		withID: func(ref any, id string) any { r := ref.(spec.EncryptionRef); r.ID = id; return r },
	},
}

// TestSeal_OpensOnlyWhereItWasSealed: with SECRETS_KEY the stored value is
// ciphertext naming its key id; it opens for its owner under its own Redis
// key, after a new key is prepended (rotation), and fails with
// ErrCannotOpen, saying why and never showing the value, when the reader
// has no key or not the one that sealed, when a byte of it changed, or when
// it was copied to another task's key. Clear values (stored without a key,
// before it was set) are still read by a process that has one.
func TestSeal_OpensOnlyWhereItWasSealed(t *testing.T) {
	redis := testsupport.StartRedis(t)
	rdb := redis.Client()
	ctx := context.Background()
	oldKey, newKey, otherKey := secretsKey('a'), secretsKey('b'), secretsKey('c')
	sealer := &Store{RDB: rdb, Keys: mustKeys(t, oldKey)}
	for _, k := range secretKinds {
		for _, tt := range []struct {
			name   string
			putter *Store
			// change alters Redis after the put; it returns the reader's
			// task id and reference.
			change func(t *testing.T, owner string, ref any) (string, any)
			reader *Store
			want   string // "" opens; otherwise a word of the OpenError
		}{
			{name: "same key", putter: sealer, reader: sealer},
			{name: "rotated: a new key prepended", putter: sealer, reader: &Store{RDB: rdb, Keys: mustKeys(t, newKey+" "+oldKey)}},
			{name: "clear value, reader with a key", putter: &Store{RDB: rdb}, reader: sealer},
			{name: "reader without SECRETS_KEY", putter: sealer, reader: &Store{RDB: rdb}, want: "this process has no SECRETS_KEY"},
			{name: "sealing key dropped", putter: sealer, reader: &Store{RDB: rdb, Keys: mustKeys(t, newKey+","+otherKey)}, want: "SECRETS_KEY does not hold"},
			{name: "tampered", putter: sealer, reader: sealer, want: "does not authenticate",
				change: func(t *testing.T, owner string, ref any) (string, any) {
					v := rdb.HGet(ctx, k.redisKey(owner), "data").Val()
					i := strings.LastIndexByte(v, ':') + 5 // a byte of the nonce or ciphertext
					flipped := byte('A')
					if v[i] == 'A' {
						flipped = 'B'
					}
					rdb.HSet(ctx, k.redisKey(owner), "data", v[:i]+string(flipped)+v[i+1:])
					return owner, ref
				}},
			{name: "moved to another task's key", putter: sealer, reader: sealer, want: "does not authenticate",
				change: func(t *testing.T, owner string, ref any) (string, any) {
					thief := owner + "-thief"
					rdb.HSet(ctx, k.redisKey(thief), "owner", thief, "data", rdb.HGet(ctx, k.redisKey(owner), "data").Val())
					return thief, k.withID(ref, thief)
				}},
		} {
			t.Run(k.name+"/"+tt.name, func(t *testing.T) {
				owner := strings.NewReplacer(" ", "-", ":", "", "'", "").Replace(k.name + "-" + tt.name)
				ref, err := k.put(ctx, tt.putter, owner)
				if err != nil {
					t.Fatal(err)
				}
				stored := rdb.HGet(ctx, k.redisKey(owner), "data").Val()
				if sealed := tt.putter.Keys != nil; sealed != strings.HasPrefix(stored, sealedPrefix+tt.putter.Keys.SealKeyID()+":") || sealed == strings.Contains(stored, k.secret) {
					t.Fatalf("stored value %.80q: sealed %v", stored, sealed)
				}
				reader, readerRef := owner, ref
				if tt.change != nil {
					reader, readerRef = tt.change(t, owner, ref)
				}
				err = k.get(ctx, tt.reader, reader, readerRef)
				switch {
				case tt.want == "" && err != nil:
					t.Fatalf("get: %v", err)
				case tt.want != "" && (!errors.Is(err, ErrCannotOpen) || !strings.Contains(err.Error(), tt.want)):
					t.Fatalf("get: %v; want ErrCannotOpen saying %q", err, tt.want)
				case err != nil && strings.Contains(err.Error(), k.secret):
					t.Fatalf("the error shows the secret: %v", err)
				}
			})
		}
	}
}

// TestSeal_NewValuesUseTheFirstKey: after a rotation the enqueuer seals
// with the new first key, which a process still on the old key alone cannot
// open (so workers get the new key first), and two seals of one value
// differ (a fresh nonce each).
func TestSeal_NewValuesUseTheFirstKey(t *testing.T) {
	redis := testsupport.StartRedis(t)
	rdb := redis.Client()
	ctx := context.Background()
	oldOnly := mustKeys(t, secretsKey('a'))
	rotated := mustKeys(t, secretsKey('b')+","+secretsKey('a'))
	if oldOnly.SealKeyID() == rotated.SealKeyID() || len(rotated.SealKeyID()) != 16 {
		t.Fatalf("key ids %q %q", oldOnly.SealKeyID(), rotated.SealKeyID())
	}
	s := &Store{RDB: rdb, Keys: rotated}
	for _, k := range secretKinds {
		ref, err := k.put(ctx, s, "t1-"+k.name)
		if err != nil {
			t.Fatal(err)
		}
		first := rdb.HGet(ctx, k.redisKey("t1-"+k.name), "data").Val()
		if !strings.HasPrefix(first, sealedPrefix+rotated.SealKeyID()+":") {
			t.Errorf("%s: sealed as %.40q, want the first key's id %s", k.name, first, rotated.SealKeyID())
		}
		if err := k.get(ctx, &Store{RDB: rdb, Keys: oldOnly}, "t1-"+k.name, ref); !errors.Is(err, ErrCannotOpen) {
			t.Errorf("%s: a process with the old key alone: %v, want ErrCannotOpen", k.name, err)
		}
		if _, err := k.put(ctx, s, "t1-"+k.name); err != nil {
			t.Fatal(err)
		}
		if again := rdb.HGet(ctx, k.redisKey("t1-"+k.name), "data").Val(); again == first {
			t.Errorf("%s: two seals of one value are equal", k.name)
		}
	}
}

// TestParseKeys: empty means no sealing; a malformed SECRETS_KEY is
// refused, naming the entry and not its value.
func TestParseKeys(t *testing.T) {
	for _, tt := range []struct {
		in      string
		wantNil bool
		want    string // a word of the refusal
	}{
		{in: "", wantNil: true},
		{in: "  ", wantNil: true},
		{in: secretsKey('a')},
		{in: secretsKey('a') + " whsec_c2hvcnQ=", want: "entry 2 of 2 decodes to 5 bytes"},
		{in: "SECRET-VALUE-0f3a", want: "entry 1 of 1 does not start with whsec_"},
	} {
		k, err := ParseKeys(tt.in)
		switch {
		case tt.want == "" && (err != nil || (k == nil) != tt.wantNil):
			t.Errorf("%q: %v, %v", tt.in, k, err)
		case tt.want != "" && (!errors.Is(err, spec.ErrInvalidSecretsKey) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "SECRET-VALUE")):
			t.Errorf("%q: %v; want ErrInvalidSecretsKey saying %q", tt.in, err, tt.want)
		}
	}
}
