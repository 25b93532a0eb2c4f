package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/pdfcheck"
)

// TestEncrypt: a user password locks the document; an owner password
// alone leaves it open with the permissions given.
func TestEncrypt(t *testing.T) {
	if missing := pdfcheck.MissingPopplerTools(); len(missing) > 0 {
		t.Skipf("%v missing", missing)
	}
	ctx := context.Background()
	tests := []struct {
		name     string
		opts     EncryptOptions
		locked   bool
		printing string
	}{
		{"user only", EncryptOptions{UserPassword: "foo", Allow: []string{"print", "print_high"}}, true, "yes"},
		{"user and owner", EncryptOptions{UserPassword: "foo", OwnerPassword: "bar"}, true, "no"},
		{"owner only, no printing", EncryptOptions{OwnerPassword: "owner-secret", Allow: []string{"copy"}}, false, "no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Encrypt(ctx, testPDF("Secret"), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "e.pdf")
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = pdfcheck.Poppler{Path: path}.Info(ctx)
			if locked := err != nil; locked != tt.locked {
				t.Fatalf("locked = %v, want %v (%v)", locked, tt.locked, err)
			}
			info, err := pdfcheck.Poppler{Path: path, UserPassword: tt.opts.UserPassword}.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(info["Encrypted"], "print:"+tt.printing) {
				t.Errorf("Encrypted: %q, want print:%s", info["Encrypted"], tt.printing)
			}
		})
	}
	if _, err := Encrypt(ctx, testPDF("x"), EncryptOptions{}); err == nil {
		t.Error("no password accepted")
	}
}

// TestMerge: the files' pages in order; an unreadable file is named.
func TestMerge(t *testing.T) {
	ctx := context.Background()
	out, err := Merge(ctx, []File{{Name: "a.pdf", Data: testPDF("Alpha")}, {Name: "b.pdf", Data: testPDF("Bravo", "Charlie")}}, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for page, want := range map[int]string{1: "Alpha", 2: "Bravo", 3: "Charlie"} {
		if got := popplerText(t, out, page); !strings.Contains(got, want) {
			t.Errorf("page %d: %q, want %s", page, got, want)
		}
	}
	_, err = Merge(ctx, []File{{Name: "a.pdf", Data: testPDF("Alpha")}, {Name: "bad.pdf", Data: []byte("%PDF-1.4 junk")}}, MergeOptions{})
	if ie, ok := err.(*InputError); !ok || ie.File != "bad.pdf" {
		t.Errorf("err = %v, want an InputError naming bad.pdf", err)
	}
}
