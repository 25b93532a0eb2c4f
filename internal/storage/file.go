package storage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// File stores objects as files under a directory: the embedded default.
//
// Layout under Dir:
//
//	<prefix><key>                 the object's bytes
//	.meta/<prefix><key>.json      sidecar: etag, size, inode, metadata
//	.meta/<prefix><key>.lock      flock(2) target serialising publish/replace
//	.tmp/.tmp-*                   uploads in progress (or left by a crash)
//
// Keys never have a segment starting with '.', so none of these names can
// collide with an object.
//
// Create writes and fsyncs a temp file in .tmp (one directory, so that a
// sweep of files a crash left reads one directory, never the tree) while
// hashing it, then link(2)s it into place: link fails with EEXIST when the name is
// taken, which is the create-only check, and a crash at any point leaves
// either no object or the complete one. The sidecar is written to its own
// temp file before the link and renamed into place only by the winner,
// after the link. It records the data file's inode, so a sidecar that does
// not belong to the current data file (a crash between the two steps) is
// detected; Stat then hashes the content again and reports no metadata.
//
// The guarantees hold for processes on one host, or on a shared file
// system with POSIX link, rename and flock semantics.
type File struct {
	dir    string // absolute
	prefix string // "" or ends in "/"
	log    *slog.Logger
	// sidecars remembers the sidecars Stat read, by data file: a stored
	// PDF's reader (bin/api's links, a worker's reuse) then costs one
	// stat(2), not the sidecar's open, read and JSON decode as well.
	sidecars sidecarCache
}

var _ Backend = (*File)(nil)

const (
	metaDir    = ".meta"
	tempDir    = ".tmp"
	tempPrefix = ".tmp-"
	copyBuffer = 256 << 10
)

// NewFile returns a file backend rooted at dir (created if missing) that
// puts prefix ("" for none) in front of every key.
func NewFile(dir, prefix string) (*File, error) {
	if dir == "" {
		return nil, errors.New("storage: file backend needs a directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: resolving %q: %w", dir, err)
	}
	p, err := normalizePrefix(prefix)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(abs, tempDir), 0o755); err != nil {
		return nil, fmt.Errorf("storage: creating artifact directory: %w", err)
	}
	return &File{dir: abs, prefix: p, log: orDiscard(nil)}, nil
}

// temp is the directory of uploads in progress.
func (f *File) temp() string { return filepath.Join(f.dir, tempDir) }

// Dir is the absolute root directory.
func (f *File) Dir() string { return f.dir }

// Describe returns the file:// URL of the root directory.
func (f *File) Describe() string {
	d := fileURL(f.dir)
	if f.prefix != "" {
		d += " (prefix " + f.prefix + ")"
	}
	return d
}

func fileURL(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

func (f *File) paths(key string) (full, data, meta string, err error) {
	full, err = fullKey(f.prefix, key)
	if err != nil {
		return "", "", "", err
	}
	rel := filepath.FromSlash(full)
	return full, filepath.Join(f.dir, rel), filepath.Join(f.dir, metaDir, rel), nil
}

// sidecar is the JSON stored in .meta/<key>.json.
type sidecar struct {
	ETag               string            `json:"etag"`
	Size               int64             `json:"size"`
	Inode              uint64            `json:"inode"`
	ContentType        string            `json:"content_type,omitempty"`
	ContentDisposition string            `json:"content_disposition,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	Stored             time.Time         `json:"stored"`
}

// Stat describes the object under key.
func (f *File) Stat(ctx context.Context, key string) (Object, error) {
	full, data, meta, err := f.paths(key)
	if err != nil {
		return Object{}, err
	}
	if err := ctx.Err(); err != nil {
		return Object{}, err
	}
	fi, err := os.Stat(data)
	if err != nil || !fi.Mode().IsRegular() {
		return Object{}, notFound(full, err)
	}
	obj := Object{Key: full, URL: fileURL(data), Size: fi.Size()}
	if sc, ok := f.sidecars.get(data, fi); ok {
		obj.ETag, obj.Metadata = sc.ETag, maps.Clone(sc.Metadata)
		return obj, nil
	}
	if sc, ok := readSidecar(meta+".json", fi); ok {
		f.sidecars.put(data, fi, sc)
		obj.ETag, obj.Metadata = sc.ETag, maps.Clone(sc.Metadata)
		return obj, nil
	}
	// No sidecar for this inode: hash the content (crash between link and
	// sidecar, or a file placed by hand).
	f.log.Warn("artifact has no matching metadata sidecar; hashing its content", "key", full)
	fh, err := os.Open(data)
	if err != nil {
		return Object{}, notFound(full, err)
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, ctxReader{ctx, fh}, make([]byte, copyBuffer))
	if err != nil {
		return Object{}, fmt.Errorf("storage: hashing %s: %w", full, err)
	}
	obj.Size, obj.ETag = n, hex.EncodeToString(h.Sum(nil))
	return obj, nil
}

// maxCachedSidecars bounds the sidecar cache; past it, it starts afresh.
const maxCachedSidecars = 4096

// sidecarCache maps a data file's path to the sidecar read for it, valid
// while the file is the same one: same device, inode, size, mtime and
// ctime. Every write of an object is a new data file (a temp file linked
// or renamed into place, a new inode) whose sidecar is renamed in after
// it, so a sidecar that was current for a file stays current for it.
type sidecarCache struct {
	mu sync.Mutex
	m  map[string]cachedSidecar
}

type cachedSidecar struct {
	id fileID
	sc sidecar
}

type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // ns
}

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec}, true
}

func (c *sidecarCache) get(path string, fi fs.FileInfo) (sidecar, bool) {
	id, ok := idOf(fi)
	if !ok {
		return sidecar{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[path]
	if !ok || e.id != id {
		return sidecar{}, false
	}
	return e.sc, true
}

func (c *sidecarCache) put(path string, fi fs.FileInfo, sc sidecar) {
	id, ok := idOf(fi)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedSidecars {
		c.m = make(map[string]cachedSidecar)
	}
	c.m[path] = cachedSidecar{id: id, sc: sc}
}

func readSidecar(path string, data fs.FileInfo) (sidecar, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return sidecar{}, false
	}
	var sc sidecar
	if json.Unmarshal(b, &sc) != nil || sc.ETag == "" {
		return sidecar{}, false
	}
	st, ok := data.Sys().(*syscall.Stat_t)
	if !ok || sc.Inode != st.Ino || sc.Size != data.Size() {
		return sidecar{}, false
	}
	return sc, true
}

func notFound(key string, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("storage: %s: %w", key, err)
}

// Open returns the object's content.
func (f *File) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	full, data, _, err := f.paths(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fh, err := os.Open(data)
	if err != nil {
		return nil, notFound(full, err)
	}
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() {
		fh.Close()
		return nil, notFound(full, err)
	}
	return fh, nil
}

// Create stores r under key unless the key already holds an object.
func (f *File) Create(ctx context.Context, key string, r io.Reader, o PutOptions) (Object, error) {
	return f.put(ctx, key, "", r, o)
}

// Replace stores r under key if the current object's ETag is ifMatchETag.
func (f *File) Replace(ctx context.Context, key, ifMatchETag string, r io.Reader, o PutOptions) (Object, error) {
	if ifMatchETag == "" {
		return Object{}, errors.New("storage: Replace needs the ETag of the object it replaces (use Create for new objects)")
	}
	return f.put(ctx, key, ifMatchETag, r, o)
}

// put stores r under key in three steps, so that nothing partial is
// published: the data and the sidecar go to temp files, then both move into
// place under the key's lock. ifMatch "" is a Create, else a Replace.
func (f *File) put(ctx context.Context, key, ifMatch string, r io.Reader, o PutOptions) (Object, error) {
	t, md, err := f.prepare(ctx, key, o)
	if err != nil {
		return Object{}, err
	}
	var s staged
	defer s.cleanup()

	// 1. Data to a temp file, hashed on the way.
	sc, err := s.writeData(ctx, f.temp(), t.full, r)
	if err != nil {
		return Object{}, err
	}
	obj := Object{Key: t.full, URL: fileURL(t.data), ETag: sc.ETag, Size: sc.Size, Metadata: md}

	// 2. Sidecar to its own temp file.
	sc.ContentType, sc.ContentDisposition = contentType(t.full, o), contentDisposition(o.FileName)
	sc.Metadata, sc.Stored = md, time.Now().UTC()
	if s.meta, err = writeTempJSON(f.temp(), sc); err != nil {
		return Object{}, fmt.Errorf("storage: writing metadata of %s: %w", t.full, err)
	}

	// 3. Publish under the per-key lock, so a Replace's compare and rename
	// and a Create's link and sidecar rename never interleave.
	if err := f.publish(ctx, &s, t, ifMatch); err != nil {
		return Object{}, err
	}
	return obj, nil
}

// putTarget is where a put of key publishes: its full key (with the
// prefix), its data file and its sidecar's path without ".json".
type putTarget struct{ key, full, data, meta string }

// prepare checks key and the metadata, and makes the directories a put of
// key writes to.
func (f *File) prepare(ctx context.Context, key string, o PutOptions) (putTarget, map[string]string, error) {
	full, data, meta, err := f.paths(key)
	if err != nil {
		return putTarget{}, nil, err
	}
	md, err := cleanMetadata(o.Metadata)
	if err != nil {
		return putTarget{}, nil, err
	}
	if err := ctx.Err(); err != nil {
		return putTarget{}, nil, err
	}
	if err := f.mkdirs(filepath.Dir(data)); err != nil {
		return putTarget{}, nil, err
	}
	if err := f.mkdirs(filepath.Dir(meta)); err != nil {
		return putTarget{}, nil, err
	}
	return putTarget{key: key, full: full, data: data, meta: meta}, md, nil
}

// staged are the temp files of a put not yet moved into place; a name is ""
// once its file is published or removed, and cleanup removes the others.
type staged struct {
	data, meta string
}

func (s *staged) cleanup() {
	if s.meta != "" {
		_ = os.Remove(s.meta)
	}
	if s.data != "" {
		_ = os.Remove(s.data)
	}
}

// writeData copies r into a synced temp file in dir and returns the
// sidecar's fields the bytes decide: ETag, Size and the file's Inode.
func (s *staged) writeData(ctx context.Context, dir, full string, r io.Reader) (sidecar, error) {
	tmp, err := createTemp(dir)
	if err != nil {
		return sidecar{}, fmt.Errorf("storage: %s: %w", full, err)
	}
	s.data = tmp.Name()
	h := sha256.New()
	size, err := writeSynced(tmp, ctxReader{ctx, r}, h)
	if err != nil {
		return sidecar{}, fmt.Errorf("storage: writing %s: %w", full, err)
	}
	tfi, err := os.Stat(s.data)
	if err != nil {
		return sidecar{}, fmt.Errorf("storage: %s: %w", full, err)
	}
	sc := sidecar{ETag: hex.EncodeToString(h.Sum(nil)), Size: size}
	if st, _ := tfi.Sys().(*syscall.Stat_t); st != nil {
		sc.Inode = st.Ino
	}
	return sc, nil
}

// publish moves the staged files into place under the key's lock: the data
// by link(2) for a Create (which fails when the name exists) or, after the
// ETag compare, by rename(2) for a Replace; then the sidecar, then it syncs
// the directories.
func (f *File) publish(ctx context.Context, s *staged, t putTarget, ifMatch string) error {
	unlock, err := lockFile(ctx, t.meta+".lock")
	if err != nil {
		return fmt.Errorf("storage: locking %s: %w", t.full, err)
	}
	defer unlock()
	if ifMatch == "" {
		if err := os.Link(s.data, t.data); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%w: %s", ErrExists, t.full)
			}
			return fmt.Errorf("storage: publishing %s: %w", t.full, err)
		}
	} else if err := f.replaceData(ctx, s, t, ifMatch); err != nil {
		return err
	}
	if err := os.Rename(s.meta, t.meta+".json"); err != nil {
		// The object is published; Stat falls back to hashing it.
		f.log.Warn("storing artifact metadata failed", "key", t.full, "err", err)
	} else {
		s.meta = ""
	}
	if s.data != "" {
		_ = os.Remove(s.data)
		s.data = ""
	}
	if err := syncDir(filepath.Dir(t.data)); err != nil {
		return fmt.Errorf("storage: syncing directory of %s: %w", t.full, err)
	}
	if err := syncDir(filepath.Dir(t.meta)); err != nil {
		f.log.Warn("syncing metadata directory failed", "key", t.full, "err", err)
	}
	return nil
}

// replaceData renames the staged data over the key's if the current
// object's ETag is ifMatch; the caller holds the key's lock.
func (f *File) replaceData(ctx context.Context, s *staged, t putTarget, ifMatch string) error {
	cur, err := f.Stat(ctx, t.key)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %w", ErrPreconditionFailed, err)
	}
	if err != nil {
		return err
	}
	if cur.ETag != ifMatch {
		return fmt.Errorf("%w: %s has etag %s, not %s", ErrPreconditionFailed, t.full, cur.ETag, ifMatch)
	}
	if err := os.Rename(s.data, t.data); err != nil {
		return fmt.Errorf("storage: publishing %s: %w", t.full, err)
	}
	s.data = ""
	return nil
}

// Ping creates, syncs and removes a probe file in the root directory.
func (f *File) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp, err := createTemp(f.temp())
	if err != nil {
		return fmt.Errorf("storage: %s is not writable: %w", f.dir, err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	if _, err := writeSynced(tmp, strings.NewReader("ping"), nil); err != nil {
		return fmt.Errorf("storage: %s is not writable: %w", f.dir, err)
	}
	return os.Remove(name)
}

// RemoveStaleTemp deletes temp files (".tmp-*" in the temp directory, left
// by a crash) last modified more than olderThan ago, and returns how many it
// removed. It reads that one directory, never the artifact tree; run it in
// the background with an age well above the longest upload.
func (f *File) RemoveStaleTemp(ctx context.Context, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	entries, err := os.ReadDir(f.temp())
	if err != nil {
		return 0, fmt.Errorf("storage: reading %s: %w", f.temp(), err)
	}
	n := 0
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if e.IsDir() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
			if os.Remove(filepath.Join(f.temp(), e.Name())) == nil {
				n++
			}
		}
	}
	return n, nil
}

// mkdirs creates dir and its missing parents below f.dir, fsyncing the
// parent of each directory it creates so the new entries are durable.
func (f *File) mkdirs(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	rel, err := filepath.Rel(f.dir, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("storage: %s is outside %s", dir, f.dir)
	}
	cur := f.dir
	for seg := range strings.SplitSeq(rel, string(filepath.Separator)) {
		parent := cur
		cur = filepath.Join(cur, seg)
		err := os.Mkdir(cur, 0o755)
		switch {
		case err == nil:
			if err := syncDir(parent); err != nil {
				return fmt.Errorf("storage: syncing %s: %w", parent, err)
			}
		case errors.Is(err, fs.ErrExist):
			if fi, err := os.Stat(cur); err != nil || !fi.IsDir() {
				return fmt.Errorf("storage: %s exists and is not a directory", cur)
			}
		default:
			return fmt.Errorf("storage: %w", err)
		}
	}
	return nil
}

func createTemp(dir string) (*os.File, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return os.OpenFile(filepath.Join(dir, tempPrefix+hex.EncodeToString(b[:])), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}

// writeSynced copies r into f (and h), fsyncs and closes f.
func writeSynced(f *os.File, r io.Reader, h hash.Hash) (int64, error) {
	var w io.Writer = f
	if h != nil {
		w = io.MultiWriter(f, h)
	}
	n, err := io.CopyBuffer(w, r, make([]byte, copyBuffer))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func writeTempJSON(dir string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	tmp, err := createTemp(dir)
	if err != nil {
		return "", err
	}
	if _, err := writeSynced(tmp, strings.NewReader(string(b)), nil); err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lockFile takes an exclusive flock(2) on path (created if missing),
// polling so ctx can cancel the wait. The returned func releases it.
func lockFile(ctx context.Context, path string) (func(), error) {
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	delay := time.Millisecond
	for {
		err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = fh.Close() }, nil // close releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			fh.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			fh.Close()
			return nil, context.Cause(ctx)
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}
