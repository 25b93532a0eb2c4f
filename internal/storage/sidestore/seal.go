package sidestore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Sealing, for the secret kinds (Credentials, Passwords). With SECRETS_KEY,
// what PutCredentials and PutPasswords store is
// AES-256-GCM ciphertext, so the secrets are not in clear in Redis's
// memory, its RDB and AOF files, its replicas or a MONITOR stream while the
// export waits and runs. The additional data binds the ciphertext to the
// Redis key it is stored under and to the owning task: a sealed value
// copied to another task's key, or from credentials to passwords, does not
// open. The value names the key id that sealed it, so opening picks the
// key without trying each, and keys rotate: the first key seals, every key
// of the list opens.
//
// Without SECRETS_KEY the values are stored in clear. Values stored in
// clear (by an enqueuer without the key, or before the key was set) are
// read whether or not this process has keys, so exports queued before the
// key was set keep working. Refusing them would not protect against anyone
// who can write to Redis: such a writer can enqueue exports of its own
// anyway.

// sealedPrefix starts a sealed value; a clear one is JSON, "{…".
const sealedPrefix = "sealed:v1:"

// keyIDBytes is the length of a key id: 64 bits tell keys apart; they
// are not a security margin.
const keyIDBytes = 8

// ErrCannotOpen matches every error of a sealed value this process cannot
// open (OpenError says why). The export that needs it fails for good.
var ErrCannotOpen = errors.New("sidestore: a sealed value cannot be opened")

// OpenError is why a sealed value did not open; Reason never holds the
// value or a key.
type OpenError struct{ Reason string }

func (e *OpenError) Error() string        { return ErrCannotOpen.Error() + ": " + e.Reason }
func (e *OpenError) Is(target error) bool { return target == ErrCannotOpen }

// Keys seals and opens stored secrets with SECRETS_KEY's keys. A nil *Keys
// stores them in clear and opens no sealed value.
type Keys struct {
	sealID string                 // hex id of the first key, which seals
	byID   map[string]cipher.AEAD // every key, by hex id
}

// ParseKeys parses a SECRETS_KEY value (spec.ParseSecretsKey); an empty
// value gives nil Keys: secrets stored in clear.
func ParseKeys(s string) (*Keys, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	secrets, err := spec.ParseSecretsKey(s)
	if err != nil {
		return nil, err
	}
	return NewKeys(secrets)
}

// NewKeys returns the Keys of secrets, the first sealing; each is at least
// spec.SecretsKeyBytes long. The AES key and the id are derived from each
// secret (HKDF-SHA256, distinct labels), so the same secret used elsewhere
// (a CALLBACK_SECRET entry) is not used as-is, and the id says nothing of
// the key.
func NewKeys(secrets [][]byte) (*Keys, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no key", spec.ErrInvalidSecretsKey)
	}
	k := &Keys{byID: make(map[string]cipher.AEAD, len(secrets))}
	for i, secret := range secrets {
		if len(secret) < spec.SecretsKeyBytes {
			return nil, fmt.Errorf("%w: key %d of %d has %d bytes, want at least %d", spec.ErrInvalidSecretsKey, i+1, len(secrets), len(secret), spec.SecretsKeyBytes)
		}
		// The labels (and additionalData's) still say "credstore", the
		// package's name when they were first written: they are part of
		// every sealed value in Redis, not a name to keep in step.
		aesKey, err := hkdf.Key(sha256.New, secret, nil, "pdfexport credstore seal v1", 32)
		if err != nil {
			return nil, fmt.Errorf("sidestore: deriving key %d: %w", i+1, err)
		}
		rawID, err := hkdf.Key(sha256.New, secret, nil, "pdfexport credstore key id v1", keyIDBytes)
		if err != nil {
			return nil, fmt.Errorf("sidestore: deriving key %d: %w", i+1, err)
		}
		block, err := aes.NewCipher(aesKey)
		if err != nil {
			return nil, fmt.Errorf("sidestore: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("sidestore: key %d: %w", i+1, err)
		}
		id := hex.EncodeToString(rawID)
		if i == 0 {
			k.sealID = id
		}
		if _, dup := k.byID[id]; !dup {
			k.byID[id] = aead
		}
	}
	return k, nil
}

// SealKeyID is the id of the key that seals ("" for nil Keys), for logs:
// it tells operators which key a process seals with during a rotation.
func (k *Keys) SealKeyID() string {
	if k == nil {
		return ""
	}
	return k.sealID
}

// additionalData binds a sealed value to where it is stored and whose it is.
func additionalData(redisKey, owner, keyID string) []byte {
	return []byte("pdfexport credstore v1\x00" + redisKey + "\x00" + owner + "\x00" + keyID)
}

// seal returns what Redis stores for the secret plain under redisKey,
// owned by owner: plain itself for nil Keys, otherwise
// "sealed:v1:<key id>:<base64(nonce ‖ ciphertext)>".
func (k *Keys) seal(redisKey, owner string, plain []byte) (string, error) {
	if k == nil {
		return string(plain), nil
	}
	aead := k.byID[k.sealID]
	// A random 96-bit nonce per seal: an export seals at most two values,
	// far below the 2^32 seals per key at which GCM's nonce collisions
	// start to matter, and keys rotate.
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("sidestore: sealing: %w", err)
	}
	box := aead.Seal(nonce, nonce, plain, additionalData(redisKey, owner, k.sealID))
	return sealedPrefix + k.sealID + ":" + base64.StdEncoding.EncodeToString(box), nil
}

// open returns the secret stored as v under redisKey for owner: a clear
// value as it is, a sealed one opened (an *OpenError when it cannot be).
func (k *Keys) open(redisKey, owner, v string) ([]byte, error) {
	rest, sealed := strings.CutPrefix(v, sealedPrefix)
	if !sealed {
		return []byte(v), nil
	}
	id, b64, ok := strings.Cut(rest, ":")
	if !ok || len(id) != 2*keyIDBytes {
		return nil, &OpenError{Reason: "it is not a well-formed sealed value"}
	}
	if k == nil {
		return nil, &OpenError{Reason: fmt.Sprintf("it is sealed (key id %s) and this process has no SECRETS_KEY", id)}
	}
	aead, ok := k.byID[id]
	if !ok {
		return nil, &OpenError{Reason: fmt.Sprintf("it is sealed with key id %s, which this process's SECRETS_KEY does not hold (a key removed while exports sealed with it were queued, or another deployment's key)", id)}
	}
	box, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(box) < aead.NonceSize()+aead.Overhead() {
		return nil, &OpenError{Reason: "it is not a well-formed sealed value"}
	}
	plain, err := aead.Open(nil, box[:aead.NonceSize()], box[aead.NonceSize():], additionalData(redisKey, owner, id))
	if err != nil {
		return nil, &OpenError{Reason: fmt.Sprintf("it does not authenticate under key id %s: it was altered in Redis, or stored for another export", id)}
	}
	return plain, nil
}
