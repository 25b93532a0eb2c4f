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
