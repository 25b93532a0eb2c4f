package harness

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitHTTP(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := WaitHTTP(ctx, srv.URL, nil); err != nil || calls.Load() != 3 {
		t.Fatalf("WaitHTTP = %v after %d calls, want ready on the third", err, calls.Load())
	}

	never := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not ready: chromium", http.StatusServiceUnavailable)
	}))
	t.Cleanup(never.Close)
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if err := WaitHTTP(short, never.URL, nil); err == nil || !strings.Contains(err.Error(), "not ready: chromium") {
		t.Fatalf("WaitHTTP on a never-ready server = %v, want the last answer in the error", err)
	}
	exited := errors.New("worker exited")
	if err := WaitHTTP(context.Background(), never.URL, func() error { return exited }); !errors.Is(err, exited) {
		t.Fatalf("WaitHTTP with a gone process = %v", err)
	}
}

func TestFreePortAndSyncBuffer(t *testing.T) {
	p, err := FreePort()
	if err != nil || p <= 0 {
		t.Fatalf("FreePort = %d, %v", p, err)
	}
	var b SyncBuffer
	done := make(chan struct{})
	go func() { _, _ = b.Write([]byte("a")); close(done) }()
	_, _ = b.Write([]byte("b"))
	<-done
	if s := b.String(); len(s) != 2 {
		t.Fatalf("buffer %q lost a write", s)
	}
}

// TestProc_StopAndKill: a clean stop reports nil; a process that ignores
// SIGTERM is killed with its group after the grace period; a child it
// started goes with it.
func TestProc_StopAndKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the harness starts no process")
	}
	p, err := Start("sleeper", "", "/bin/sh", nil, "-c", "echo started; exec sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	// Not testsupport.Eventually: testsupport imports this package.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Output(), "started") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Stop(5 * time.Second); err == nil || p.ExitCode() != -1 {
		t.Fatalf("sleep on SIGTERM: Stop = %v, exit %d; want a signal exit", err, p.ExitCode())
	}

	stubborn, err := Start("stubborn", t.TempDir()+"/log", "/bin/sh", nil, "-c", `trap "" TERM; sleep 30 & echo child $!; wait`)
	if err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(stubborn.Output(), "child") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := stubborn.Stop(300 * time.Millisecond); !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("Stop of a process that ignores SIGTERM = %v, want ErrStopTimeout", err)
	}
	if !strings.HasPrefix(stubborn.Tail(100), "child ") {
		t.Errorf("Tail = %q", stubborn.Tail(100))
	}

	clean, err := Start("clean", "", "/bin/sh", nil, "-c", "exit 0")
	if err != nil {
		t.Fatal(err)
	}
	<-clean.Done()
	if err := clean.Stop(time.Second); err != nil {
		t.Errorf("Stop after a clean exit = %v", err)
	}
}

// TestStartRedis answers PING on its port and stops.
func TestStartRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	r, err := StartRedis(context.Background(), t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version == "" || r.Port == 0 || !strings.HasPrefix(r.URL(3), "redis://127.0.0.1:") {
		t.Errorf("Redis = %+v, URL %s", r, r.URL(3))
	}
	r.Stop()
	if !r.Proc.Exited() {
		t.Error("still running after Stop")
	}
}
