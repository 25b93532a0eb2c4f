package engine

import (
	"bytes"
	"context"
	"errors"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/pdfexport/pdfexport/internal/assemble/pdfperm"
)

// MaxPasswordBytes bounds a password: AES-256 takes at most 127 bytes.
const MaxPasswordBytes = 127

// EncryptOptions are a document's passwords and what a reader with the
// user password may do. An empty OwnerPassword is the user's; an empty
// UserPassword opens the document without a password, with only the
// Allow permissions (an owner-only document).
type EncryptOptions struct {
	UserPassword  string
	OwnerPassword string
	// Allow are spec.PermissionNames.
	Allow []string
}

// Encrypt encrypts pdf with AES-256.
func Encrypt(ctx context.Context, pdf []byte, opts EncryptOptions) ([]byte, error) {
	owner, err := opts.owner()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conf := Conf()
	conf.Cmd = model.ENCRYPT
	conf.Permissions = pdfperm.Flags(opts.Allow)
	conf.UserPW, conf.OwnerPW = opts.UserPassword, owner
	conf.EncryptUsingAES, conf.EncryptKeyLength = true, 256
	var out bytes.Buffer
	if err := api.Encrypt(bytes.NewReader(pdf), &out, conf); err != nil {
		return nil, &InputError{Err: err}
	}
	return out.Bytes(), nil
}

// owner is the owner password the document is encrypted with, or the
// *InputError of passwords it cannot be.
func (o EncryptOptions) owner() (string, error) {
	owner := o.OwnerPassword
	if owner == "" {
		owner = o.UserPassword
	}
	switch {
	case owner == "":
		return "", &InputError{Err: errors.New("a user or owner password is required")}
	case len(owner) > MaxPasswordBytes || len(o.UserPassword) > MaxPasswordBytes:
		return "", &InputError{Err: errors.New("a password is longer than 127 bytes")}
	}
	return owner, nil
}
