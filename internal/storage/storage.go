package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

var (
	// ErrNotFound is returned by Stat and Open when no object is stored
	// under the key, and (together with ErrPreconditionFailed) by Replace
	// when the object to replace is gone.
	ErrNotFound = errors.New("storage: object not found")

	// ErrExists is returned by Create when the key already holds an object.
	// The stored object is untouched; callers that only need the artifact
	// to exist treat this as success and Stat the key.
	ErrExists = errors.New("storage: object already exists")

	// ErrPreconditionFailed is returned by Replace when the stored object's
	// ETag is not the one given: someone replaced it since it was read.
	ErrPreconditionFailed = errors.New("storage: precondition failed (etag changed)")

	// ErrInvalidKey is returned by every operation for a key that
	// ValidateKey rejects.
	ErrInvalidKey = errors.New("storage: invalid key")
)

// Object describes a stored object.
type Object struct {
	Key      string            // full key, including the backend's prefix
	URL      string            // presigned GET URL (s3) or file:// URL
	ETag     string            // opaque version tag, without quotes; Replace takes it
	Size     int64             // bytes
	Metadata map[string]string // user metadata, keys lower-cased
}

// PutOptions are the optional attributes of a Create or Replace.
type PutOptions struct {
	// Metadata is stored with the object and returned by Stat. Keys are
	// lower-cased and may hold letters, digits, '-' and '_'; values must be
	// printable ASCII (they travel as HTTP headers on S3). At most 2 KiB in
	// all.
	Metadata map[string]string
	// FileName is the download name offered by Content-Disposition
	// ("attachment; filename=..."); characters other than letters, digits,
	// '.', '-' and '_' are replaced by '_'. Empty: no Content-Disposition.
	FileName string
	// ContentType defaults to application/pdf for keys ending in .pdf,
	// application/json for .json, image/png, image/jpeg and image/webp
	// for .png, .jpeg and .webp, else application/octet-stream.
	ContentType string
}

// Backend stores artifacts. All methods are safe for concurrent use and
// bounded by ctx.
type Backend interface {
	// Stat describes the object under key, or returns ErrNotFound.
	Stat(ctx context.Context, key string) (Object, error)
	// Create streams r into a new object under key. If the key already
	// holds an object it returns ErrExists and leaves that object as it is
	// (even when the race is lost half-way through the upload). On any
	// error nothing is stored under key.
	Create(ctx context.Context, key string, r io.Reader, o PutOptions) (Object, error)
	// Replace streams r over the object under key if its ETag is still
	// ifMatchETag, else returns ErrPreconditionFailed (wrapping also
	// ErrNotFound when the object is gone).
	Replace(ctx context.Context, key, ifMatchETag string, r io.Reader, o PutOptions) (Object, error)
	// Open returns the object's content, or ErrNotFound.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Ping proves the backend is usable: the directory is writable, or the
	// credentials reach the bucket.
	Ping(ctx context.Context) error
	// Describe names the backend for logs, without secrets.
	Describe() string
}

// Config selects and configures a backend; it mirrors the STORAGE_URL and
// S3_* environment variables.
type Config struct {
	// URL is "file:///abs/dir", "file://./rel/dir" (relative to the working
	// directory) or "s3://bucket[/prefix]".
	URL string
	// S3Endpoint is the endpoint of an S3-compatible server
	// ("http://127.0.0.1:7070"); empty means AWS.
	S3Endpoint string
	// S3Region defaults to us-east-1.
	S3Region string
	// S3ForcePathStyle addresses buckets as endpoint/bucket instead of
	// bucket.endpoint (most S3-compatible servers need it).
	S3ForcePathStyle bool
	// S3CreateBucket creates the bucket when it is missing (development).
	S3CreateBucket bool
	// PresignTTL is the lifetime of presigned URLs; 0 means 1h, at most 7
	// days (the SigV4 limit).
	PresignTTL time.Duration
	// Logger receives warnings (failed cleanup, degraded metadata); nil
	// discards them.
	Logger *slog.Logger
}

// Open returns the backend cfg.URL names. It touches the network only when
// S3CreateBucket is set; call Ping to check the backend is usable.
func Open(ctx context.Context, cfg Config) (Backend, error) {
	if cfg.URL == "" {
		return nil, errors.New("storage URL is empty: want file:///abs/dir, file://./rel/dir or s3://bucket/prefix")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("storage URL %q is not a URL: %w", cfg.URL, err)
	}
	if u.User != nil {
		return nil, fmt.Errorf("storage URL %q must not carry credentials (use the standard AWS variables)", redact(u))
	}
	if u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("storage URL %q: query, fragment and opaque parts are not supported", cfg.URL)
	}
	switch u.Scheme {
	case "file":
		dir, err := fileURLDir(u)
		if err != nil {
			return nil, fmt.Errorf("storage URL %q: %w", cfg.URL, err)
		}
		f, err := NewFile(dir, "")
		if err != nil {
			return nil, err
		}
		f.log = orDiscard(cfg.Logger)
		return f, nil
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("storage URL %q: missing bucket, want s3://bucket[/prefix]", cfg.URL)
		}
		if u.Port() != "" || strings.Contains(u.Host, ":") {
			return nil, fmt.Errorf("storage URL %q: bucket %q must not have a port (set S3_ENDPOINT for the server)", cfg.URL, u.Host)
		}
		return NewS3(ctx, S3Config{
			Bucket:         u.Host,
			Prefix:         strings.TrimPrefix(u.Path, "/"),
			Endpoint:       cfg.S3Endpoint,
			Region:         cfg.S3Region,
			ForcePathStyle: cfg.S3ForcePathStyle,
			CreateBucket:   cfg.S3CreateBucket,
			PresignTTL:     cfg.PresignTTL,
			Logger:         cfg.Logger,
		})
	case "":
		return nil, fmt.Errorf("storage URL %q has no scheme: want file:// or s3://", cfg.URL)
	default:
		return nil, fmt.Errorf("storage URL %q: scheme %q is not supported, want file or s3", cfg.URL, u.Scheme)
	}
}

// fileURLDir turns file:///abs, file://localhost/abs and file://./rel into
// a directory path.
func fileURLDir(u *url.URL) (string, error) {
	switch u.Host {
	case "", "localhost":
		if u.Path == "" || u.Path == "/" {
			return "", errors.New("missing directory, want file:///abs/dir or file://./rel/dir")
		}
		return filepath.FromSlash(u.Path), nil
	case ".":
		rel := strings.TrimPrefix(u.Path, "/")
		if rel == "" {
			return ".", nil
		}
		return filepath.FromSlash("./" + rel), nil
	default:
		return "", fmt.Errorf("host %q is not allowed in a file URL, want file:///abs/dir or file://./rel/dir", u.Host)
	}
}

func redact(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("REDACTED")
	}
	return c.String()
}

// MaxKeyLen is the longest key accepted, prefix included (S3's limit).
const MaxKeyLen = 1024

// ValidateKey reports whether key can name an object in every backend: a
// relative slash-separated path of non-empty segments, no segment "." or
// ".." or starting with "." (dot names are the file backend's own), no
// backslash, NUL or other control character, valid UTF-8, at most
// MaxKeyLen bytes. Errors wrap ErrInvalidKey.
func ValidateKey(key string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, why) }
	switch {
	case key == "":
		return bad("empty")
	case len(key) > MaxKeyLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxKeyLen))
	case !utf8.ValidString(key):
		return bad("not valid UTF-8")
	case strings.HasPrefix(key, "/"):
		return bad("starts with '/'")
	case strings.HasSuffix(key, "/"):
		return bad("ends with '/'")
	case strings.Contains(key, `\`):
		return bad("contains a backslash")
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return bad("contains a control character or NUL")
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return bad("has an empty segment ('//')")
		case seg == "." || seg == "..":
			return bad("has a '.' or '..' segment")
		case strings.HasPrefix(seg, "."):
			return bad("has a segment starting with '.'")
		}
	}
	return nil
}

// normalizePrefix checks a backend prefix ("" or key-like) and makes it end
// in "/".
func normalizePrefix(prefix string) (string, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return "", nil
	}
	if err := ValidateKey(prefix); err != nil {
		return "", fmt.Errorf("prefix: %w", err)
	}
	return prefix + "/", nil
}

// fullKey validates key and puts prefix in front.
func fullKey(prefix, key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if len(prefix)+len(key) > MaxKeyLen {
		return "", fmt.Errorf("%w %q: longer than %d bytes with prefix %q", ErrInvalidKey, key, MaxKeyLen, prefix)
	}
	return prefix + key, nil
}

const maxMetadataBytes = 2 << 10

// cleanMetadata validates metadata and returns a copy with lower-cased keys.
func cleanMetadata(md map[string]string) (map[string]string, error) {
	if len(md) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(md))
	total := 0
	for k, v := range md {
		lk := strings.ToLower(k)
		if lk == "" {
			return nil, errors.New("storage: metadata key is empty")
		}
		for _, r := range lk {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return nil, fmt.Errorf("storage: metadata key %q: only letters, digits, '-' and '_' are allowed", k)
			}
		}
		for _, r := range v {
			if r < 0x20 || r > 0x7e {
				return nil, fmt.Errorf("storage: metadata %q: value must be printable ASCII", k)
			}
		}
		if _, dup := out[lk]; dup {
			return nil, fmt.Errorf("storage: metadata key %q given twice (keys are case-insensitive)", k)
		}
		out[lk] = v
		total += len(lk) + len(v)
	}
	if total > maxMetadataBytes {
		return nil, fmt.Errorf("storage: metadata is %d bytes, at most %d allowed", total, maxMetadataBytes)
	}
	return out, nil
}

// contentDisposition returns the Content-Disposition for a download name,
// or "" for none.
func contentDisposition(name string) string {
	if name == "" {
		return ""
	}
	return `attachment; filename="` + safeFileName(name) + `"`
}

// safeFileName is name with every character but letters, digits, '.', '-'
// and '_' replaced by '_', at most 200 bytes: safe in a header unquoted.
func safeFileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

func contentType(key string, o PutOptions) string {
	switch {
	case o.ContentType != "":
		return o.ContentType
	case strings.HasSuffix(key, ".pdf"):
		return "application/pdf"
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	case strings.HasSuffix(key, ".png"), strings.HasSuffix(key, ".jpeg"), strings.HasSuffix(key, ".webp"):
		return "image/" + key[strings.LastIndexByte(key, '.')+1:] // a screenshot's
	default:
		return "application/octet-stream"
	}
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// ctxReader fails reads once ctx is done, so a cancelled upload stops
// pulling from its source.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := context.Cause(c.ctx); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
