package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// harness is one backend under test plus the backend-specific ways to look
// behind it.
type harness struct {
	Backend
	// leftovers lists what a failed upload may leave behind: ".tmp-" files
	// (file) or incomplete multipart uploads (s3). It must be empty.
	leftovers func(t *testing.T) []string
	// download fetches obj.URL the way a user would.
	download func(t *testing.T, obj Object) (body []byte, header http.Header)
	// multipartSize is a body size that takes the backend's multi-part
	// path (several S3 parts); the file backend has one path.
	multipartSize int
}

// The behavioural suite runs against every backend: these are the promises
// the worker relies on.

func TestFileBackend(t *testing.T) {
	runSuite(t, func(t *testing.T) harness { return newFileHarness(t) })
}

func TestS3Backend(t *testing.T) {
	srv := testsupport.StartS3(t)
	var n atomic.Int64
	runSuite(t, func(t *testing.T) harness {
		// A fresh prefix per subtest keeps them apart on one server.
		return newS3Harness(t, srv, fmt.Sprintf("suite-%d/", n.Add(1)), S3Config{})
	})
}

func newFileHarness(t *testing.T) harness {
	dir := t.TempDir()
	f, err := NewFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	return harness{
		Backend: f,
		leftovers: func(t *testing.T) []string {
			var found []string
			_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
					found = append(found, path)
				}
				return nil
			})
			return found
		},
		download: func(t *testing.T, obj Object) ([]byte, http.Header) {
			u, err := url.Parse(obj.URL)
			if err != nil || u.Scheme != "file" {
				t.Fatalf("URL %q is not a file:// URL: %v", obj.URL, err)
			}
			b, err := os.ReadFile(u.Path)
			if err != nil {
				t.Fatalf("reading the file the URL names: %v", err)
			}
			return b, nil
		},
		multipartSize: 3 << 20,
	}
}

func newS3Harness(t *testing.T, srv *testsupport.S3Server, prefix string, c S3Config) harness {
	c.Bucket, c.Prefix, c.Endpoint, c.ForcePathStyle, c.Credentials = srv.Bucket, prefix, srv.Endpoint(), true, srv.Credentials()
	s, err := NewS3(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	part := c.PartSize
	if part == 0 {
		part = defaultPartSize
	}
	return harness{
		Backend: s,
		leftovers: func(t *testing.T) []string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			keys, err := s.ListIncompleteUploads(ctx)
			if err != nil {
				t.Fatalf("listing multipart uploads: %v", err)
			}
			return keys
		},
		download: func(t *testing.T, obj Object) ([]byte, http.Header) {
			if !strings.Contains(obj.URL, "X-Amz-Signature=") {
				t.Fatalf("URL %q is not presigned", obj.URL)
			}
			resp, err := http.Get(obj.URL)
			if err != nil {
				t.Fatalf("GET presigned URL: %v", err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET presigned URL: %s %v\n%s", resp.Status, err, b)
			}
			return b, resp.Header
		},
		multipartSize: int(part) + 1<<20, // two parts
	}
}

func runSuite(t *testing.T, newHarness func(t *testing.T) harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h harness)
	}{
		{"RoundTripKeepsBytesAndMetadata", testRoundTrip},
		{"StatAndOpenOfMissingKeyAreErrNotFound", testMissing},
		{"ConcurrentCreatesOneWinsOtherGetsErrExists", testConcurrentCreates},
		{"CreateOfExistingKeyIsErrExistsAndKeepsOriginal", testCreateExisting},
		{"FailingReaderStoresNothing", testFailingReader},
		{"CancelledContextStoresNothing", testCancelled},
		{"ReplaceNeedsTheCurrentETag", testReplace},
		{"LargeStreamUsesBoundedMemory", testLargeStream},
		{"BadKeysAreRejected", testBadKeys},
		{"DeletePrefixRemovesTheFolderOnly", testDeletePrefix},
		{"DeletePrefixRejectsBadFolders", testDeletePrefixBad},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newHarness(t)) })
	}
}

const pdfKey = "ops-guide/2026.11.3/0123456789abcdef.pdf"

// data returns n deterministic pseudo-random bytes.
func data(seed uint64, n int) []byte {
	b, _ := io.ReadAll(gen(seed, int64(n)))
	return b
}

// gen streams n deterministic pseudo-random bytes without holding them.
func gen(seed uint64, n int64) io.Reader {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	return io.LimitReader(rand.NewChaCha8(s), n)
}

func readAll(t *testing.T, b Backend, key string) []byte {
	t.Helper()
	rc, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return got
}

func assertNoLeftovers(t *testing.T, h harness) {
	t.Helper()
	if l := h.leftovers(t); len(l) > 0 {
		t.Errorf("a failed upload left %v behind", l)
	}
}

func testRoundTrip(t *testing.T, h harness) {
	ctx := t.Context()
	body := data(1, 300<<10)
	md := map[string]string{"Manual-ID": "ops-guide", "fence": "7"}
	obj, err := h.Create(ctx, pdfKey, bytes.NewReader(body), PutOptions{Metadata: md, FileName: "ops guide 2026.11.3.pdf"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if !strings.HasSuffix(obj.Key, pdfKey) || obj.Size != int64(len(body)) || obj.ETag == "" || obj.URL == "" {
		t.Fatalf("Create returned %+v, want key ending %s, size %d, an etag and a URL", obj, pdfKey, len(body))
	}
	wantMD := map[string]string{"manual-id": "ops-guide", "fence": "7"}
	if fmt.Sprint(obj.Metadata) != fmt.Sprint(wantMD) {
		t.Errorf("Create metadata = %v, want %v", obj.Metadata, wantMD)
	}
	st, err := h.Stat(ctx, pdfKey)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st.Key != obj.Key || st.ETag != obj.ETag || st.Size != obj.Size || fmt.Sprint(st.Metadata) != fmt.Sprint(wantMD) {
		t.Errorf("Stat = %+v, want what Create returned: %+v", st, obj)
	}
	if got := readAll(t, h, pdfKey); !bytes.Equal(got, body) {
		t.Errorf("Open returned %d bytes that differ from the %d stored", len(got), len(body))
	}
	got, hdr := h.download(t, st)
	if !bytes.Equal(got, body) {
		t.Errorf("the URL served %d bytes that differ from the %d stored", len(got), len(body))
	}
	if hdr != nil {
		if ct := hdr.Get("Content-Type"); ct != "application/pdf" {
			t.Errorf("Content-Type = %q, want application/pdf", ct)
		}
		if cd := hdr.Get("Content-Disposition"); cd != `attachment; filename="ops_guide_2026.11.3.pdf"` {
			t.Errorf("Content-Disposition = %q", cd)
		}
	}
	// An empty body is a valid object too.
	empty, err := h.Create(ctx, "empty/x.json", strings.NewReader(""), PutOptions{})
	if err != nil || empty.Size != 0 {
		t.Fatalf("Create of an empty body: %+v, %v", empty, err)
	}
}

func testMissing(t *testing.T, h harness) {
	if _, err := h.Stat(t.Context(), "ops-guide/none.pdf"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := h.Open(t.Context(), "ops-guide/none.pdf"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open of a missing key: %v, want ErrNotFound", err)
	}
	// A "directory" made by a longer key is not an object.
	if _, err := h.Create(t.Context(), "a/b/c.pdf", strings.NewReader("x"), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Stat(t.Context(), "a/b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat of a key prefix: %v, want ErrNotFound", err)
	}
}

// barrierReader blocks its first Read until every reader of its group has
// been read once, so racing uploads really overlap.
type barrierReader struct {
	r    io.Reader
	once sync.Once
	wg   *sync.WaitGroup
}

func (b *barrierReader) Read(p []byte) (int, error) {
	b.once.Do(func() {
		b.wg.Done()
		done := make(chan struct{})
		go func() { b.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
	return b.r.Read(p)
}

func testConcurrentCreates(t *testing.T, h harness) {
	for _, size := range []int{64 << 10, h.multipartSize} {
		t.Run(fmt.Sprintf("%dKiB", size>>10), func(t *testing.T) {
			key := fmt.Sprintf("race/%d.pdf", size)
			bodies := [2][]byte{data(10, size), data(11, size)}
			var wg, barrier sync.WaitGroup
			barrier.Add(2)
			var objs [2]Object
			var errs [2]error
			for i := range 2 {
				wg.Go(func() {
					objs[i], errs[i] = h.Create(t.Context(), key, &barrierReader{r: bytes.NewReader(bodies[i]), wg: &barrier}, PutOptions{})
				})
			}
			wg.Wait()
			winner := -1
			for i, err := range errs {
				switch {
				case err == nil && winner < 0:
					winner = i
				case err == nil:
					t.Fatalf("both creates succeeded: %+v and %+v", objs[0], objs[1])
				case !errors.Is(err, ErrExists):
					t.Fatalf("create %d: %v, want nil or ErrExists", i, err)
				}
			}
			if winner < 0 {
				t.Fatalf("no create succeeded: %v, %v", errs[0], errs[1])
			}
			if got := readAll(t, h, key); !bytes.Equal(got, bodies[winner]) {
				t.Fatalf("stored content is not the winner's")
			}
			if st, err := h.Stat(t.Context(), key); err != nil || st.ETag != objs[winner].ETag {
				t.Fatalf("Stat = %+v, %v; want the winner's etag %s", st, err, objs[winner].ETag)
			}
			assertNoLeftovers(t, h)
		})
	}
}

func testCreateExisting(t *testing.T, h harness) {
	ctx := t.Context()
	orig, err := h.Create(ctx, pdfKey, strings.NewReader("original"), PutOptions{Metadata: map[string]string{"fence": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{10, h.multipartSize} {
		_, err := h.Create(ctx, pdfKey, bytes.NewReader(data(3, size)), PutOptions{Metadata: map[string]string{"fence": "2"}})
		if !errors.Is(err, ErrExists) {
			t.Fatalf("second Create (%d bytes): %v, want ErrExists", size, err)
		}
	}
	if got := readAll(t, h, pdfKey); string(got) != "original" {
		t.Errorf("content after a refused Create = %.40q, want the original", got)
	}
	st, err := h.Stat(ctx, pdfKey)
	if err != nil || st.ETag != orig.ETag || st.Metadata["fence"] != "1" {
		t.Errorf("Stat after a refused Create = %+v, %v; want etag %s and fence 1", st, err, orig.ETag)
	}
	assertNoLeftovers(t, h)
}

var errBoom = errors.New("renderer crashed")

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func testFailingReader(t *testing.T, h harness) {
	for _, size := range []int{100 << 10, h.multipartSize} {
		t.Run(fmt.Sprintf("after%dKiB", size>>10), func(t *testing.T) {
			key := fmt.Sprintf("fail/%d.pdf", size)
			r := io.MultiReader(gen(4, int64(size)), errReader{errBoom})
			if _, err := h.Create(t.Context(), key, r, PutOptions{}); !errors.Is(err, errBoom) {
				t.Fatalf("Create with a failing reader: %v, want an error wrapping the reader's", err)
			}
			if _, err := h.Stat(t.Context(), key); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Stat after the failed Create: %v, want ErrNotFound", err)
			}
			assertNoLeftovers(t, h)
			// The key is not poisoned: a later Create succeeds.
			if _, err := h.Create(t.Context(), key, strings.NewReader("ok"), PutOptions{}); err != nil {
				t.Fatalf("Create after a failed one: %v", err)
			}
		})
	}
}

// cancelAfter cancels ctx once n bytes have been read.
type cancelAfter struct {
	r      io.Reader
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= int64(n); c.n <= 0 {
		c.cancel()
	}
	return n, err
}

func testCancelled(t *testing.T, h harness) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	size := int64(h.multipartSize)
	r := &cancelAfter{r: gen(5, 2*size), n: size + 1<<20, cancel: cancel}
	if _, err := h.Create(ctx, pdfKey, r, PutOptions{}); err == nil {
		t.Fatal("Create with a context cancelled mid-stream succeeded")
	}
	if _, err := h.Stat(t.Context(), pdfKey); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Stat after the cancelled Create: %v, want ErrNotFound", err)
	}
	assertNoLeftovers(t, h)
}

func testReplace(t *testing.T, h harness) {
	ctx := t.Context()
	v1, err := h.Create(ctx, pdfKey, strings.NewReader("version one"), PutOptions{Metadata: map[string]string{"fence": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Replace(ctx, pdfKey, "0123456789abcdef0123456789abcdef", strings.NewReader("stale"), PutOptions{}); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("Replace with a wrong etag: %v, want ErrPreconditionFailed", err)
	}
	if got := readAll(t, h, pdfKey); string(got) != "version one" {
		t.Fatalf("content after a refused Replace = %q", got)
	}
	v2, err := h.Replace(ctx, pdfKey, v1.ETag, strings.NewReader("version two"), PutOptions{Metadata: map[string]string{"fence": "2"}})
	if err != nil {
		t.Fatalf("Replace with the current etag: %v", err)
	}
	if v2.ETag == "" || v2.ETag == v1.ETag || v2.Size != int64(len("version two")) {
		t.Errorf("Replace returned %+v; want a new etag (old %s)", v2, v1.ETag)
	}
	st, err := h.Stat(ctx, pdfKey)
	if err != nil || st.ETag != v2.ETag || st.Metadata["fence"] != "2" {
		t.Errorf("Stat after Replace = %+v, %v; want etag %s, fence 2", st, err, v2.ETag)
	}
	if got := readAll(t, h, pdfKey); string(got) != "version two" {
		t.Errorf("content after Replace = %q", got)
	}
	// The etag it replaced is stale now.
	if _, err := h.Replace(ctx, pdfKey, v1.ETag, strings.NewReader("three"), PutOptions{}); !errors.Is(err, ErrPreconditionFailed) {
		t.Errorf("Replace with the replaced etag: %v, want ErrPreconditionFailed", err)
	}
	// A multi-part replacement takes the same path.
	big := data(6, h.multipartSize)
	v3, err := h.Replace(ctx, pdfKey, v2.ETag, bytes.NewReader(big), PutOptions{})
	if err != nil {
		t.Fatalf("multi-part Replace: %v", err)
	}
	if got := readAll(t, h, pdfKey); !bytes.Equal(got, big) || v3.Size != int64(len(big)) {
		t.Errorf("content after multi-part Replace differs")
	}
	_, err = h.Replace(ctx, "ops-guide/none.pdf", v1.ETag, strings.NewReader("x"), PutOptions{})
	if !errors.Is(err, ErrPreconditionFailed) || !errors.Is(err, ErrNotFound) {
		t.Errorf("Replace of a missing key: %v, want ErrPreconditionFailed and ErrNotFound", err)
	}
	if _, err := h.Stat(ctx, "ops-guide/none.pdf"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Replace of a missing key created it: %v", err)
	}
	assertNoLeftovers(t, h)
}

// The memory bound is the point of streaming: a 50 MB PDF must not be held
// whole. The heap is sampled while the upload runs.
func testLargeStream(t *testing.T, h harness) {
	const size = 50_000_000
	const limit = 40 << 20
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	obj, err := h.Create(t.Context(), "big/50mb.pdf", gen(7, size), PutOptions{})
	close(stop)
	<-sampled
	if err != nil {
		t.Fatalf("Create of 50 MB: %v", err)
	}
	grew := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("50 MB upload took %s; heap in use grew by at most %.1f MiB", time.Since(start).Round(time.Millisecond), float64(grew)/(1<<20))
	if grew > limit {
		t.Errorf("heap in use grew by %.1f MiB during a 50 MB upload, want < %d MiB", float64(grew)/(1<<20), limit>>20)
	}
	if obj.Size != size {
		t.Errorf("stored size %d, want %d", obj.Size, size)
	}
	want := sha256.New()
	_, _ = io.Copy(want, gen(7, size))
	rc, err := h.Open(t.Context(), "big/50mb.pdf")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := sha256.New()
	if _, err := io.Copy(got, rc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Error("the 50 MB object read back differs from what was streamed")
	}
}

func testBadKeys(t *testing.T, h harness) {
	ctx := t.Context()
	for _, key := range []string{"", "/abs.pdf", "../up.pdf", "a/../../b.pdf", "a/./b.pdf", `a\b.pdf`, "a\x00b.pdf",
		"a//b.pdf", "dir/", "a/.meta/x.pdf", ".tmp-x", "a\nb.pdf", strings.Repeat("k", MaxKeyLen+1)} {
		if _, err := h.Create(ctx, key, strings.NewReader("x"), PutOptions{}); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Create(%q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := h.Stat(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Stat(%q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := h.Open(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Open(%q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := h.Replace(ctx, key, "etag", strings.NewReader("x"), PutOptions{}); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Replace(%q): %v, want ErrInvalidKey", key, err)
		}
	}
	if _, err := h.Create(ctx, "m.pdf", strings.NewReader("x"), PutOptions{Metadata: map[string]string{"bad key": "v"}}); err == nil {
		t.Error("Create accepted a metadata key with a space")
	}
	if _, err := h.Create(ctx, "m.pdf", strings.NewReader("x"), PutOptions{Metadata: map[string]string{"k": "line\nbreak"}}); err == nil {
		t.Error("Create accepted a metadata value with a newline")
	}
	if _, err := h.Stat(ctx, "m.pdf"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a refused Create stored something: %v", err)
	}
}
