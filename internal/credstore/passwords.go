package credstore

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// An encryption's passwords (options.encryption) are secrets exactly like
// per-export credentials, and kept the same way: under the task's id
// ("pdfexport:passwords:{<task id>}", a hash of the owner and the data, TTL
// SOURCE_TTL), read and released only by that task, their identity
// HMAC-SHA256 under the same Redis-held key (spec.Passwords.IdentityBytes
// keeps them apart from credentials), sealed with the same Keys.

func passwordsKey(id string) string { return "pdfexport:passwords:{" + id + "}" }

func (s *Store) passwordsIdentity(ctx context.Context, p spec.Passwords) (string, error) {
	k, err := s.key(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, k)
	m.Write(p.IdentityBytes())
	return hex.EncodeToString(m.Sum(nil)), nil
}

// PutPasswords stores p for ttl as the passwords of the task owner and
// returns the reference its envelope carries.
func (s *Store) PutPasswords(ctx context.Context, owner string, p spec.Passwords, ttl time.Duration) (spec.EncryptionRef, error) {
	if owner == "" {
		return spec.EncryptionRef{}, errors.New("credstore: PutPasswords needs the owning task's id")
	}
	s.forgetKey() // the key as Redis has it now, as in Put
	ident, err := s.passwordsIdentity(ctx, p)
	if err != nil {
		return spec.EncryptionRef{}, err
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return spec.EncryptionRef{}, fmt.Errorf("credstore: %w", err)
	}
	body, err := s.Keys.seal(passwordsKey(owner), owner, plain)
	if err != nil {
		return spec.EncryptionRef{}, err
	}
	if _, err := s.RDB.TxPipelined(ctx, func(pl redis.Pipeliner) error {
		pl.Del(ctx, passwordsKey(owner))
		pl.HSet(ctx, passwordsKey(owner), "owner", owner, "data", body)
		pl.PExpire(ctx, passwordsKey(owner), ttl)
		return nil
	}); err != nil {
		return spec.EncryptionRef{}, fmt.Errorf("credstore: storing passwords: %w", err)
	}
	return spec.EncryptionRef{ID: owner, Identity: ident}, nil
}

// GetPasswords reads the passwords ref names for the task owner, checks
// that owner stored them (ErrNotOwner), opens them if sealed
// (ErrCannotOpen) and checks that they hash to the reference's identity.
// Gone: ErrMissing.
func (s *Store) GetPasswords(ctx context.Context, owner string, ref spec.EncryptionRef) (spec.Passwords, error) {
	res, err := getScript.Run(ctx, s.RDB, []string{passwordsKey(ref.ID)}, owner).Slice()
	if err != nil {
		return spec.Passwords{}, fmt.Errorf("credstore: reading passwords: %w", err)
	}
	switch code, _ := res[0].(int64); {
	case code == 0:
		return spec.Passwords{}, ErrMissing
	case code == 2 || len(res) < 2:
		return spec.Passwords{}, ErrNotOwner
	}
	stored, _ := res[1].(string)
	body, err := s.Keys.open(passwordsKey(ref.ID), owner, stored)
	if err != nil {
		return spec.Passwords{}, err
	}
	var p spec.Passwords
	if err := json.Unmarshal(body, &p); err != nil {
		return spec.Passwords{}, errors.New("credstore: stored passwords are malformed")
	}
	for attempt := 0; ; attempt++ {
		ident, err := s.passwordsIdentity(ctx, p)
		if err != nil {
			return spec.Passwords{}, err
		}
		if hmac.Equal([]byte(ident), []byte(ref.Identity)) {
			return p, nil
		}
		if attempt > 0 {
			return spec.Passwords{}, fmt.Errorf("credstore: passwords %s do not match the identity their reference claims", ref.ID)
		}
		s.forgetKey()
	}
}

// ReleasePasswords deletes the passwords ref names if the task owner owns
// them; it reports whether it deleted anything.
func (s *Store) ReleasePasswords(ctx context.Context, owner string, ref spec.EncryptionRef) (bool, error) {
	n, err := releaseScript.Run(ctx, s.RDB, []string{passwordsKey(ref.ID)}, owner).Int()
	if err != nil {
		return false, fmt.Errorf("credstore: deleting passwords: %w", err)
	}
	return n == 1, nil
}
