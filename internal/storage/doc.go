// Package storage keeps rendered artifacts (PDFs and their small JSON
// companions) in a directory or an S3 bucket behind one Backend interface.
//
// What it promises:
//
//   - Create is create-only. A key that already holds an object is never
//     overwritten: S3 sends If-None-Match: * on PutObject and on
//     CompleteMultipartUpload, the file backend publishes with link(2), which
//     fails when the name exists. The loser of a race gets ErrExists and the
//     winner's bytes stay; callers treat ErrExists as success.
//   - Uploads stream. Bodies of unknown length are never held whole in
//     memory: S3 uploads go out in PartSize parts (multipart above one part)
//     and hold about (Concurrency+3)*PartSize bytes (20 MiB by default); the
//     file backend copies through a 256 KiB buffer.
//   - Nothing partial is published. A reader that fails, a cancelled context
//     or a crash leaves no object under the key: S3 multipart uploads that
//     fail are aborted, file writes go to a ".tmp-" file that is only linked
//     into place once complete and fsynced.
//   - Replace is compare-and-swap on the ETag (If-Match on S3, an flock(2)
//     guarded compare then rename(2) on files).
//
// What it does not promise: an S3 multipart upload whose abort cannot reach
// the server (it went away mid-upload), or whose CreateMultipartUpload
// response was lost, stays on the server until a bucket lifecycle rule
// (AbortIncompleteMultipartUpload, e.g. after 1 day) removes it; configure
// one. ".tmp-" files of a crashed process stay until RemoveStaleTemp runs.
// ETags are opaque: the file backend's is the hex SHA-256 of the content,
// S3's is whatever the server returns (an MD5 for single-part uploads).
//
// Keys are relative slash-separated paths such as
// "ops-guide/2026.11.3/0123456789abcdef.pdf"; see ValidateKey. Each backend
// puts its prefix in front; Object.Key is the full key.
package storage
