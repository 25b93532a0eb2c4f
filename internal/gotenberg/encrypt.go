package gotenberg

import (
	"context"
	"fmt"

	"github.com/pdfexport/pdfexport/internal/assemble/engine"
)

// readEncrypt reads userPassword, ownerPassword and the allow* fields
// (each true by default) as Gotenberg does: an empty owner password is
// the user's, an empty user password with an owner's is an owner-only
// document. ok: a password is set.
func readEncrypt(f *form) (opts engine.EncryptOptions, ok bool) {
	opts = engine.EncryptOptions{UserPassword: f.text("userPassword"), OwnerPassword: f.text("ownerPassword"), Allow: permissions(f)}
	for _, k := range []string{"userPassword", "ownerPassword"} {
		if len(f.values[k]) > engine.MaxPasswordBytes {
			f.invalid(k, "…", fmt.Errorf("longer than %d bytes", engine.MaxPasswordBytes))
		}
	}
	return opts, opts.UserPassword != "" || opts.OwnerPassword != ""
}

// allPermissions are the permissions of every allow* field at its default.
func allPermissions() []string { return permissions(&form{}) }

// encryptStep is the encryption step, the last of a conversion or a merge.
func encryptStep(f *form) (postStep, bool) {
	opts, ok := readEncrypt(f)
	if !ok {
		if len(opts.Allow) < len(allPermissions()) {
			// Gotenberg's words: a restriction needs a password to hold.
			f.errs = append(f.errs, "permission restrictions require a 'userPassword' or 'ownerPassword'")
		}
		return postStep{}, false
	}
	return postStep{order: stepEncrypt, run: func(ctx context.Context, files []upload) ([]upload, error) {
		return eachPDF(files, func(data []byte) ([]byte, error) { return engine.Encrypt(ctx, data, opts) })
	}}, true
}

// encryptRoute is POST /forms/pdfengines/encrypt: AES-256 with the
// passwords and permissions given.
func encryptRoute(f *form) engineJob {
	opts, ok := readEncrypt(f)
	return func(ctx context.Context, _ *form, pdfs []upload) ([]upload, error) {
		if !ok {
			return nil, badRequest("Invalid form data: a 'userPassword' or 'ownerPassword' is required")
		}
		return eachPDF(pdfs, func(data []byte) ([]byte, error) { return engine.Encrypt(ctx, data, opts) })
	}
}
