package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// prefixDeleter is what a spool's owner uses of a backend.
type prefixDeleter interface {
	DeletePrefix(ctx context.Context, prefix string) error
}

func deleter(t *testing.T, h harness) prefixDeleter {
	t.Helper()
	d, ok := h.Backend.(prefixDeleter)
	if !ok {
		t.Fatalf("%T has no DeletePrefix", h.Backend)
	}
	return d
}

func createAll(t *testing.T, b Backend, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := b.Create(t.Context(), k, strings.NewReader("body of "+k), PutOptions{FileName: filepath.Base(k)}); err != nil {
			t.Fatalf("Create(%s): %v", k, err)
		}
	}
}

// testDeletePrefix: every object under the folder goes, a neighbour whose
// name only starts like it stays, a second delete and one of a folder
// never written are no errors, and a key deleted can be created again.
func testDeletePrefix(t *testing.T, h harness) {
	ctx := t.Context()
	gone := []string{"gotenberg-webhooks/job1/out.pdf", "gotenberg-webhooks/job1/in/0/stamp.pdf", "gotenberg-webhooks/job1/in/1/a.txt"}
	kept := []string{"gotenberg-webhooks/job10/out.pdf", "gotenberg-webhooks/job/out.pdf", "gotenberg-webhooks/x.pdf", "job1/out.pdf"}
	createAll(t, h, append(gone, kept...)...)
	d := deleter(t, h)
	for range 2 {
		if err := d.DeletePrefix(ctx, "gotenberg-webhooks/job1/"); err != nil {
			t.Fatalf("DeletePrefix: %v", err)
		}
	}
	if err := d.DeletePrefix(ctx, "gotenberg-webhooks/never/"); err != nil {
		t.Errorf("DeletePrefix of an empty folder: %v", err)
	}
	for _, k := range gone {
		if _, err := h.Stat(ctx, k); !errors.Is(err, ErrNotFound) {
			t.Errorf("Stat(%s) after the delete: %v, want ErrNotFound", k, err)
		}
		if _, err := h.Open(ctx, k); !errors.Is(err, ErrNotFound) {
			t.Errorf("Open(%s) after the delete: %v, want ErrNotFound", k, err)
		}
	}
	for _, k := range kept {
		if got := readAll(t, h, k); string(got) != "body of "+k {
			t.Errorf("%s reads %q after a neighbour's delete", k, got)
		}
	}
	createAll(t, h, gone[0])
	if got := readAll(t, h, gone[0]); string(got) != "body of "+gone[0] {
		t.Errorf("%s created again reads %q", gone[0], got)
	}
}

// testDeletePrefixBad: a folder is checked as a key is and must end in
// "/"; a refused delete removes nothing.
func testDeletePrefixBad(t *testing.T, h harness) {
	ctx := t.Context()
	createAll(t, h, "a/b.pdf", "a/c/d.pdf")
	d := deleter(t, h)
	for _, prefix := range []string{"", "/", "a", "a/b.pdf", "/a/", "../a/", "a/../", "a/./", "a//", `a\c/`, "a/.meta/", ".meta/a/", ".tmp/", "a\x00/",
		strings.Repeat("k", MaxKeyLen) + "/"} {
		if err := d.DeletePrefix(ctx, prefix); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("DeletePrefix(%q): %v, want ErrInvalidKey", prefix, err)
		}
	}
	for _, k := range []string{"a/b.pdf", "a/c/d.pdf"} {
		if _, err := h.Stat(ctx, k); err != nil {
			t.Errorf("Stat(%s) after refused deletes: %v", k, err)
		}
	}
}

// TestFile_DeletePrefixStaysInTheRoot: the folder's directories go, in
// the tree and beside the sidecars, and a symbolic link where a folder
// should be is neither followed nor removed.
func TestFile_DeletePrefixStaysInTheRoot(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	f, err := NewFile(dir, "exports")
	if err != nil {
		t.Fatal(err)
	}
	createAll(t, f, "hooks/j/out.pdf", "hooks/j/in/0/s.pdf")
	if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "exports", "hooks", "link")); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"hooks/j/", "hooks/link/"} {
		if err := f.DeletePrefix(t.Context(), prefix); err != nil {
			t.Fatalf("DeletePrefix(%s): %v", prefix, err)
		}
	}
	for _, p := range []string{"exports/hooks/j", ".meta/exports/hooks/j"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the delete: %v, want it gone", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "precious")); err != nil {
		t.Errorf("a file behind a symbolic link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "exports", "hooks", "link")); err != nil {
		t.Errorf("the symbolic link itself: %v", err)
	}
}

// TestS3_DeletePrefixPagesThroughTheFolder: a folder of more objects
// than one ListObjectsV2 page (1000) is deleted whole, page by page.
func TestS3_DeletePrefixPagesThroughTheFolder(t *testing.T) {
	srv := testsupport.StartS3(t)
	h := newS3Harness(t, srv, "paged/", S3Config{})
	const n = 1001
	keys := make(chan string, n)
	for i := range n {
		keys <- fmt.Sprintf("hooks/j/in/%d/f.txt", i)
	}
	close(keys)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for k := range keys {
				if _, err := h.Create(t.Context(), k, strings.NewReader("x"), PutOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Create: %v", err)
	}
	createAll(t, h, "hooks/other/out.pdf")
	if err := deleter(t, h).DeletePrefix(t.Context(), "hooks/j/"); err != nil {
		t.Fatalf("DeletePrefix: %v", err)
	}
	out, err := h.Backend.(*S3).Client().ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: &srv.Bucket, Prefix: aws.String("paged/")})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range out.Contents {
		left = append(left, aws.ToString(o.Key))
	}
	if len(left) != 1 || left[0] != "paged/hooks/other/out.pdf" {
		t.Errorf("left after the delete: %d objects %.200v, want the neighbour alone", len(left), left)
	}
}
