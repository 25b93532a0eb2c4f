// Package harness holds what every program that starts pdfexport processes
// needs — the demo, the benchmark, the chaos suite and the tests that drive
// the binaries: a child process in its own process group with its log (Proc),
// a private redis-server (StartRedis), a free loopback port, waiting until an
// HTTP endpoint answers 200, a goroutine-safe buffer for a child's output,
// and pdfinfo's page count of a PDF. Standard library only.
package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitHTTP polls url until it answers 200 OK, ctx ends, or gone (when not
// nil) reports that the process meant to serve it has exited. The error
// names the last answer or failure.
func WaitHTTP(ctx context.Context, url string, gone func() error) error {
	client := &http.Client{Timeout: 3 * time.Second}
	last := "no answer"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		} else {
			last = err.Error()
		}
		if gone != nil {
			if err := gone(); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s", url, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// SyncBuffer is a bytes.Buffer safe for a child process's writes and
// concurrent reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
