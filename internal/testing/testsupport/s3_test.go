package testsupport

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestStartS3_ServesAndKeepsObjectsAcrossRestart(t *testing.T) {
	s := StartS3(t)
	c := s.Client()
	if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &s.Bucket, Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	s.Restart()
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &s.Bucket, Key: aws.String("k")})
	if err != nil {
		t.Fatalf("GetObject after restart: %v", err)
	}
	defer out.Body.Close()
	if b, _ := io.ReadAll(out.Body); string(b) != "v" {
		t.Errorf("object after restart = %q", b)
	}
	s.Stop()
	s.Stop() // stopping twice is fine
}

func TestVersityGWPath_FailsWithSetupHintWhenMissing(t *testing.T) {
	t.Setenv("PDFEXPORT_VERSITYGW", "")
	ft := &fatalRecorder{TB: t}
	dir := t.TempDir() // a module without bin/versitygw
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module github.com/pdfexport/pdfexport\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	func() {
		defer func() { _ = recover() }()
		VersityGWPath(ft)
	}()
	if !strings.Contains(ft.msg, "make setup") {
		t.Errorf("missing binary message = %q, want it to say `make setup`", ft.msg)
	}
}

// fatalRecorder records Fatalf instead of failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
