package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// stopAfter calls stop (once) when n bytes have been read through it.
type stopAfter struct {
	r    io.Reader
	n    int64
	once sync.Once
	stop func()
}

func (s *stopAfter) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if s.n -= int64(n); s.n <= 0 {
		s.once.Do(s.stop)
	}
	return n, err
}

func TestS3_ServerDyingMidUploadStoresNothingAndRetrySucceeds(t *testing.T) {
	srv := testsupport.StartS3(t)
	h := newS3Harness(t, srv, "fault/", S3Config{PartSize: 5 << 20, MaxAttempts: 2, MaxBackoff: 50 * time.Millisecond})
	const size = 20 << 20
	key := "ops-guide/1.0/big.pdf"

	// The server is killed once the upload is two parts in.
	r := &stopAfter{r: gen(8, size), n: 11 << 20, stop: srv.Stop}
	start := time.Now()
	_, err := h.Create(t.Context(), key, r, PutOptions{})
	if err == nil {
		t.Fatal("Create succeeded although the server died mid-upload")
	}
	if errors.Is(err, ErrExists) {
		t.Fatalf("Create reported ErrExists for a failed upload: %v", err)
	}
	t.Logf("upload failed after %s: %v", time.Since(start).Round(time.Millisecond), err)

	srv.Start()
	if _, err := h.Stat(t.Context(), key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Stat after the failed upload: %v, want ErrNotFound (nothing partial)", err)
	}
	// The abort could not reach the dead server: the incomplete upload
	// stays until a lifecycle rule removes it (documented in doc.go).
	t.Logf("incomplete uploads after the crash: %v", h.leftovers(t))

	obj, err := h.Create(t.Context(), key, gen(8, size), PutOptions{})
	if err != nil {
		t.Fatalf("Create after the restart: %v", err)
	}
	if obj.Size != size {
		t.Errorf("size %d, want %d", obj.Size, size)
	}
	want, got := sha256.New(), sha256.New()
	_, _ = io.Copy(want, gen(8, size))
	rc, err := h.Open(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.Copy(got, rc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Error("content stored after the restart differs")
	}
}

func TestS3_UnreachableServerFailsWithinTheRetryBudget(t *testing.T) {
	srv := testsupport.StartS3(t)
	h := newS3Harness(t, srv, "down/", S3Config{MaxAttempts: 3, MaxBackoff: 50 * time.Millisecond})
	srv.Stop()
	start := time.Now()
	if _, err := h.Stat(t.Context(), "x.pdf"); err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Stat against a dead server: %v, want an error that is not ErrNotFound", err)
	}
	if err := h.Ping(t.Context()); err == nil {
		t.Error("Ping against a dead server succeeded")
	}
	if _, err := h.Create(t.Context(), "x.pdf", strings.NewReader("x"), PutOptions{}); err == nil || errors.Is(err, ErrExists) {
		t.Errorf("Create against a dead server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("three calls against a dead server took %s", d)
	}
}

// Open with the standard AWS environment, as the worker runs it.
func TestS3_OpenCreatesBucketAndPingChecksIt(t *testing.T) {
	srv := testsupport.StartS3(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_PROFILE", "")
	cfg := Config{URL: "s3://fresh-bucket/exports", S3Endpoint: srv.Endpoint(), S3ForcePathStyle: true}

	missing, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := missing.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "S3_CREATE_BUCKET") {
		t.Errorf("Ping of a missing bucket: %v, want an error naming S3_CREATE_BUCKET", err)
	}

	cfg.S3CreateBucket = true
	for range 2 { // the second time the bucket exists already
		b, err := Open(t.Context(), cfg)
		if err != nil {
			t.Fatalf("Open with S3CreateBucket: %v", err)
		}
		if err := b.Ping(t.Context()); err != nil {
			t.Fatalf("Ping after creating the bucket: %v", err)
		}
		if _, err := b.Create(t.Context(), "m/v/k.pdf", strings.NewReader("x"), PutOptions{}); err != nil && !errors.Is(err, ErrExists) {
			t.Fatalf("Create: %v", err)
		}
		if obj, err := b.Stat(t.Context(), "m/v/k.pdf"); err != nil || obj.Key != "exports/m/v/k.pdf" {
			t.Fatalf("Stat = %+v, %v", obj, err)
		}
	}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
	if _, err := Open(t.Context(), cfg); err == nil {
		t.Error("Open with S3CreateBucket and a wrong secret key succeeded")
	}
	cfg.S3CreateBucket = false
	wrong, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := wrong.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("Ping with a wrong secret key: %v, want an error about credentials", err)
	}
}

// S3 answers 409 ConditionalRequestConflict when two conditional writes of
// one key overlap; the retryer treats it like a 503 and tries again.
func TestS3_ConditionalRequestConflictIsRetried(t *testing.T) {
	var puts atomic.Int32
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method != http.MethodPut || r.Header.Get("If-None-Match") != "*" {
			t.Errorf("unexpected request %s %s (If-None-Match %q)", r.Method, r.URL, r.Header.Get("If-None-Match"))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if puts.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ConditionalRequestConflict</Code><Message>A conflicting operation is in progress</Message></Error>`)
			return
		}
		w.Header().Set("ETag", `"abc"`)
		w.WriteHeader(http.StatusOK)
	}))
	defer fake.Close()
	s, err := NewS3(t.Context(), S3Config{Bucket: "bucket", Endpoint: fake.URL, ForcePathStyle: true, MaxBackoff: 10 * time.Millisecond,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "a", SecretAccessKey: "s"}, nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := s.Create(t.Context(), "k.pdf", strings.NewReader("%PDF"), PutOptions{})
	if err != nil {
		t.Fatalf("Create after one 409: %v", err)
	}
	if puts.Load() != 2 || obj.ETag != "abc" {
		t.Errorf("PUTs = %d, etag %q; want 2 and abc", puts.Load(), obj.ETag)
	}
}
