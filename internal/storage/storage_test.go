package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpen_ParsesStorageURLs(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	abs := t.TempDir()
	good := []struct {
		url, describe string
	}{
		{"file://" + abs, "file://" + abs},
		{"file://localhost" + abs, "file://" + abs},
		{"s3://artifacts", "s3://artifacts/ (endpoint http://127.0.0.1:1, region eu-west-1)"},
		{"s3://artifacts/pdf/exports", "s3://artifacts/pdf/exports/ (endpoint http://127.0.0.1:1, region eu-west-1)"},
		{"s3://artifacts/pdf/", "s3://artifacts/pdf/ (endpoint http://127.0.0.1:1, region eu-west-1)"},
	}
	for _, tc := range good {
		b, err := Open(t.Context(), Config{URL: tc.url, S3Endpoint: "http://127.0.0.1:1", S3Region: "eu-west-1", S3ForcePathStyle: true})
		if err != nil {
			t.Errorf("Open(%q): %v", tc.url, err)
			continue
		}
		if got := b.Describe(); got != tc.describe {
			t.Errorf("Open(%q).Describe() = %q, want %q", tc.url, got, tc.describe)
		}
	}

	// file://./rel is relative to the working directory.
	t.Chdir(t.TempDir())
	b, err := Open(t.Context(), Config{URL: "file://./var/artifacts"})
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "var", "artifacts"); b.(*File).Dir() != want {
		t.Errorf("file://./var/artifacts resolved to %s, want %s", b.(*File).Dir(), want)
	}
	if fi, err := os.Stat(filepath.Join(wd, "var", "artifacts")); err != nil || !fi.IsDir() {
		t.Errorf("Open did not create the directory: %v", err)
	}
	t.Chdir(cwd)

	bad := []struct {
		url, wantInErr string
	}{
		{"", "empty"},
		{"artifacts", "no scheme"},
		{"/var/artifacts", "no scheme"},
		{"ftp://host/dir", `scheme "ftp"`},
		{"file://", "missing directory"},
		{"file:///", "missing directory"},
		{"file://host/dir", `host "host"`},
		{"file:///dir?mode=x", "query"},
		{"s3://", "missing bucket"},
		{"s3:///prefix", "missing bucket"},
		{"s3://Bad_Bucket/p", "lower-case"},
		{"s3://ab", "3 to 63"},
		{"s3://bucket:9000/p", "port"},
		{"s3://key:secret@bucket/p", "credentials"},
		{"s3://bucket/../p", "'..'"},
		{"s3://bucket/a//b", "empty segment"},
		{"s3://bucket/p#frag", "fragment"},
		{"%zz", "not a URL"},
	}
	for _, tc := range bad {
		_, err := Open(t.Context(), Config{URL: tc.url})
		if err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("Open(%q) error = %v, want one mentioning %q", tc.url, err, tc.wantInErr)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error leaks the secret: %v", tc.url, err)
		}
	}

	badS3 := []struct {
		cfg       Config
		wantInErr string
	}{
		{Config{URL: "s3://bucket", S3Endpoint: "127.0.0.1:9000"}, "endpoint"},
		{Config{URL: "s3://bucket", S3Endpoint: "ftp://host"}, "endpoint"},
		{Config{URL: "s3://bucket", PresignTTL: 8 * 24 * time.Hour}, "presign TTL"},
	}
	for _, tc := range badS3 {
		if _, err := Open(t.Context(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("Open(%+v) error = %v, want one mentioning %q", tc.cfg, err, tc.wantInErr)
		}
	}
}

func TestValidateKey_AcceptsArtifactKeys(t *testing.T) {
	for _, key := range []string{"ops-guide/2026.11.3/0123456789abcdef.pdf", "ops-guide/2026.11.3/0123456789abcdef.pdf.json", "a", "a.b/c_d-e"} {
		if err := ValidateKey(key); err != nil {
			t.Errorf("ValidateKey(%q): %v", key, err)
		}
	}
}

func TestContentDisposition_IsSafe(t *testing.T) {
	for in, want := range map[string]string{
		"ops-guide-2026.11.3.pdf": `attachment; filename="ops-guide-2026.11.3.pdf"`,
		`a"b\c;d.pdf`:             `attachment; filename="a_b_c_d.pdf"`,
		"über\r\nx.pdf":           `attachment; filename="__ber__x.pdf"`,
		"":                        "",
	} {
		if got := contentDisposition(in); got != want {
			t.Errorf("contentDisposition(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFile_PingProvesTheDirectoryIsWritable(t *testing.T) {
	dir := t.TempDir()
	f, err := NewFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Ping(t.Context()); err != nil {
		t.Fatalf("Ping of a writable directory: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, tempDir)); len(entries) != 0 {
		t.Errorf("Ping left %v behind", entries)
	}
	if os.Geteuid() == 0 {
		// root writes anywhere; replace the directory by a file instead.
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := f.Ping(t.Context()); err == nil {
		t.Error("Ping succeeded on a directory it cannot write")
	}
}

func TestFile_PrefixAndURL(t *testing.T) {
	dir := t.TempDir()
	f, err := NewFile(dir, "exports")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := f.Create(t.Context(), "m/v/x.pdf", strings.NewReader("%PDF"), PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if obj.Key != "exports/m/v/x.pdf" || obj.URL != "file://"+filepath.Join(dir, "exports/m/v/x.pdf") {
		t.Errorf("Object = %+v", obj)
	}
	if sum := sha256.Sum256([]byte("%PDF")); obj.ETag != hex.EncodeToString(sum[:]) {
		t.Errorf("ETag %q is not the hex sha256 of the content", obj.ETag)
	}
}

// A crash can leave a temp file (before the link) or an object without
// its sidecar (between link and sidecar rename). Neither is visible as a
// wrong object.
func TestFile_CrashLeftoversAreNeverVisible(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	f, err := NewFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// Crash before the link: a temp file only.
	tmp := filepath.Join(dir, tempDir, tempPrefix+"crashed")
	if err := os.WriteFile(tmp, []byte("half a pd"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(ctx, "m/v/x.pdf"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Stat with only a temp file: %v, want ErrNotFound", err)
	}
	obj, err := f.Create(ctx, "m/v/x.pdf", strings.NewReader("whole pdf"), PutOptions{Metadata: map[string]string{"fence": "3"}})
	if err != nil {
		t.Fatalf("Create next to a crashed temp file: %v", err)
	}

	// Crash between link and sidecar: the sidecar is missing or belongs to
	// an older file. Stat hashes the content and still gets the etag right.
	if err := os.Remove(filepath.Join(dir, metaDir, "m/v/x.pdf.json")); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat(ctx, "m/v/x.pdf")
	if err != nil || st.ETag != obj.ETag || st.Size != obj.Size || st.Metadata != nil {
		t.Errorf("Stat without sidecar = %+v, %v; want etag %s and no metadata", st, err, obj.ETag)
	}
	if _, err := f.Replace(ctx, "m/v/x.pdf", obj.ETag, strings.NewReader("v2"), PutOptions{}); err != nil {
		t.Errorf("Replace of an object without sidecar: %v", err)
	}

	// Temp files older than the cut-off are cleaned, fresh ones kept.
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(dir, tempDir, tempPrefix+"in-progress")
	if err := os.WriteFile(fresh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The sweep reads the temp directory only, never the artifact tree
	// (large or networked stores made a start-up walk of it crash-loop the
	// worker): a temp-looking file elsewhere is not its business.
	elsewhere := filepath.Join(dir, "m/v", tempPrefix+"not-swept")
	if err := os.WriteFile(elsewhere, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(elsewhere, old, old); err != nil {
		t.Fatal(err)
	}
	n, err := f.RemoveStaleTemp(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("RemoveStaleTemp = %d, %v; want 1 removed", n, err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Error("stale temp file still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("fresh temp file was removed")
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Error("the sweep walked the artifact tree")
	}
}

// TestFile_UploadsInProgressLiveInOneDirectory: while an upload streams, its
// temp file is in the temp directory, not next to the key.
func TestFile_UploadsInProgressLiveInOneDirectory(t *testing.T) {
	dir := t.TempDir()
	f, err := NewFile(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := f.Create(context.Background(), "m/v/x.pdf", pr, PutOptions{})
		done <- err
	}()
	if _, err := pw.Write([]byte("%PDF-1.7 half")); err != nil {
		t.Fatal(err)
	}
	var temps []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			rel, _ := filepath.Rel(dir, p)
			temps = append(temps, rel)
		}
		return nil
	})
	pw.CloseWithError(errors.New("client went away"))
	if err := <-done; err == nil {
		t.Fatal("Create of a failed stream succeeded")
	}
	if len(temps) != 1 || filepath.Dir(temps[0]) != tempDir {
		t.Fatalf("temp files during the upload: %v, want one under %s/", temps, tempDir)
	}
}

func TestFile_ConcurrentReplacesOneWins(t *testing.T) {
	f, err := NewFile(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v1, err := f.Create(ctx, "k.pdf", strings.NewReader("v1"), PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := f.Replace(ctx, "k.pdf", v1.ETag, strings.NewReader(strings.Repeat("x", i+1)), PutOptions{})
			errs <- err
		}()
	}
	won := 0
	for range n {
		switch err := <-errs; {
		case err == nil:
			won++
		case !errors.Is(err, ErrPreconditionFailed):
			t.Errorf("Replace: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d Replaces with the same etag succeeded, want exactly 1", won, n)
	}
}
