package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// DeletePrefix is not part of Backend: artifacts are kept (their lifetime
// is the storage's own lifecycle rules), and only the caller that owns a
// folder of its own (a webhook's spool) removes one. A folder is a prefix
// ending in "/", so that "a/b/" never reaches "a/bc" or the object "a/b";
// it is checked as a key is. Nothing under the prefix is not an error: a
// retried task deletes again.

// folderKey checks prefix, a folder ("a/b/"), and returns its full key
// with the backend's prefix, ending in "/".
func folderKey(backendPrefix, prefix string) (string, error) {
	name, ok := strings.CutSuffix(prefix, "/")
	if !ok {
		return "", fmt.Errorf("%w %q: a folder to delete ends with '/'", ErrInvalidKey, prefix)
	}
	full, err := fullKey(backendPrefix, name)
	if err != nil {
		return "", err
	}
	if len(full)+2 > MaxKeyLen {
		return "", fmt.Errorf("%w %q: no key of at most %d bytes fits under it", ErrInvalidKey, prefix, MaxKeyLen)
	}
	return full + "/", nil
}

// DeletePrefix removes every object under the folder prefix: its files
// and their sidecars and lock files. It never leaves the root: the
// folder is checked as a key, and a symbolic link or a file where the
// folder should be is not followed or removed.
func (f *File) DeletePrefix(ctx context.Context, prefix string) error {
	full, err := folderKey(f.prefix, prefix)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rel := filepath.FromSlash(strings.TrimSuffix(full, "/"))
	// The data files go first: a sidecar left without its data file (a
	// crash between the two) is no object, a data file without its
	// sidecar still is.
	for _, dir := range []string{filepath.Join(f.dir, rel), filepath.Join(f.dir, metaDir, rel)} {
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("storage: deleting %s: %w", full, err)
		case !fi.IsDir():
			continue // not a folder: nothing stored under the prefix
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("storage: deleting %s: %w", full, err)
		}
	}
	return nil
}

// DeletePrefix removes every object under the folder prefix, a page of
// ListObjectsV2 at a time in one DeleteObjects each.
func (s *S3) DeletePrefix(ctx context.Context, prefix string) error {
	full, err := folderKey(s.prefix, prefix)
	if err != nil {
		return err
	}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &full})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("storage: listing %s: %w", full, err)
		}
		if len(page.Contents) == 0 {
			continue
		}
		ids := make([]s3types.ObjectIdentifier, 0, len(page.Contents))
		for _, o := range page.Contents {
			ids = append(ids, s3types.ObjectIdentifier{Key: o.Key})
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &s.bucket,
			Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("storage: deleting %s: %w", full, err)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			return fmt.Errorf("storage: deleting %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return nil
}
