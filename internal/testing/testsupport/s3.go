package testsupport

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// VersityGWVersion is the versitygw release the tests run against;
// scripts/install-versitygw.sh builds it into bin/.
const VersityGWVersion = "v1.8.0"

// S3Server is a private versitygw process (posix backend in a temp
// directory) bound to 127.0.0.1, with one bucket created.
type S3Server struct {
	t         testing.TB
	Port      int
	Bucket    string // created at start
	Region    string
	AccessKey string
	SecretKey string
	bin       string
	dir       string // posix backend root (buckets are its subdirectories)

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// StartS3 starts versitygw on a free port, waits until it answers and
// creates the bucket "pdfexport-test". The server is stopped when the test
// ends. The binary is bin/versitygw at the module root, or
// $PDFEXPORT_VERSITYGW; when it is missing the test fails and says how to
// build it.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	SkipShort(t, "an S3 server (versitygw)")
	s := &S3Server{
		t:         t,
		Port:      FreePort(t),
		Bucket:    "pdfexport-test",
		Region:    "us-east-1",
		AccessKey: "pdfexport-test-access",
		SecretKey: "pdfexport-test-secret-0123456789",
		bin:       VersityGWPath(t),
		dir:       t.TempDir(),
	}
	s.log = filepath.Join(s.dir, "versitygw.log")
	if err := os.Mkdir(filepath.Join(s.dir, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	s.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.Bucket}); err != nil {
		t.Fatalf("creating bucket %s on %s: %v\n%s", s.Bucket, s, err, s.Log())
	}
	return s
}

// VersityGWPath returns the versitygw binary to run: $PDFEXPORT_VERSITYGW,
// else bin/versitygw at the module root. It fails the test when the file is
// not there.
func VersityGWPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("PDFEXPORT_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("PDFEXPORT_VERSITYGW=%s: %v", p, err)
		}
		return p
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("finding the module root for bin/versitygw: %v", err)
	}
	p := filepath.Join(root, "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the S3 test server %s is missing: run `make setup` (it builds versitygw %s with scripts/install-versitygw.sh), or set PDFEXPORT_VERSITYGW", p, VersityGWVersion)
	}
	return p
}

// moduleRoot walks up from the working directory (a test runs in its
// package directory) to the root module's directory: the one whose go.mod
// is module github.com/pdfexport/pdfexport, passing the go.mod of a nested
// module (deployments/, api/) on the way.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modulePath(b) == rootModule {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", rootModule)
		}
		dir = parent
	}
}

// rootModule is the repository's root module.
const rootModule = "github.com/pdfexport/pdfexport"

// modulePath is the module line of a go.mod.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Endpoint is the server's base URL.
func (s *S3Server) Endpoint() string { return "http://" + s.Addr() }

// Addr is host:port of the server.
func (s *S3Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Credentials are the root keys the server accepts.
func (s *S3Server) Credentials() aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey, Source: "testsupport"}, nil
	})
}

// Client returns a path-style S3 client for the server with few retries.
func (s *S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:           s.Region,
		BaseEndpoint:     aws.String(s.Endpoint()),
		UsePathStyle:     true,
		Credentials:      s.Credentials(),
		RetryMaxAttempts: 2,
	})
}

// Start (re)starts the server on the same port and directory and waits
// until it answers HTTP.
func (s *S3Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.t.Fatalf("%s is already running", s)
	}
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin,
		"--port", s.Addr(),
		"--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", s.Region,
		"--quiet",
		"posix", filepath.Join(s.dir, "root"))
	// Keep the test's AWS_* and VGW_* environment out of the server.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dir}
	cmd.Stdout, cmd.Stderr = logf, logf
	exited, err := harness.StartTied(cmd)
	if err != nil {
		s.t.Fatalf("starting %s: %v", s.bin, err)
	}
	done := make(chan struct{})
	go func() { <-exited; close(done) }()
	s.cmd, s.done = cmd, done

	hc := &http.Client{Timeout: 500 * time.Millisecond}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := hc.Get(s.Endpoint() + "/")
		if err == nil {
			resp.Body.Close()
			return // any HTTP answer (403 for an anonymous request) means it serves
		}
		select {
		case <-done:
			s.cmd = nil
			s.t.Fatalf("%s exited during start-up:\n%s", s, s.Log())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s did not answer within 15s: %v\n%s", s, err, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL, as a crash would) and waits for it to
// exit. Stopping a stopped server does nothing. Stop is safe to call from
// any goroutine (a fault test stops the server mid-upload).
func (s *S3Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Restart stops and starts the server; stored objects survive.
func (s *S3Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// Log returns what the server printed.
func (s *S3Server) Log() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// String describes the server for failure messages.
func (s *S3Server) String() string { return fmt.Sprintf("versitygw %s", s.Addr()) }
