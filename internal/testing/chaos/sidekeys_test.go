package chaos

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
)

// sideKeyWatch checks, once a second for a scenario's whole run, that no
// data stored beside a task (credentials, a large source document) outlives
// the final state of its last owner: for every such key it reads the owners
// (credentials: "owner"; a document: its "o:<task>" fields) and, once all of
// them have a recorded final state, how long the key stays after that.
type sideKeyWatch struct {
	rdb    redis.UniversalClient
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	allFinal  map[string]time.Time // key → when it was first seen with every owner final
	outlived  map[string]time.Duration
	maxLinger time.Duration
	seen      int // distinct side keys seen
	seenKeys  map[string]bool
}

// sideKeyGrace is how long a key may outlive its last owner's final state:
// Finish records the state first and releases right after, in the same
// call; a sweep pass (5 s) finishes an export archived without one.
const sideKeyGrace = 7 * time.Second

func watchSideKeys(t *testing.T, rdb redis.UniversalClient) *sideKeyWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &sideKeyWatch{rdb: rdb, cancel: cancel, done: make(chan struct{}),
		allFinal: map[string]time.Time{}, outlived: map[string]time.Duration{}, seenKeys: map[string]bool{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			w.pass(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *sideKeyWatch) stop() {
	w.cancel()
	<-w.done
}

// pass looks at every side key once. Redis errors (a fault of the
// scenario) skip the pass.
func (w *sideKeyWatch) pass(ctx context.Context) {
	now := time.Now()
	present := map[string]bool{}
	for _, pattern := range []string{"pdfexport:credentials:{*}", "pdfexport:html:{*}"} {
		iter := w.rdb.Scan(ctx, 0, pattern, 500).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			present[key] = true
			owners, err := w.owners(ctx, key)
			if err != nil {
				return
			}
			final := len(owners) > 0
			for _, o := range owners {
				ok, err := outcome.IsFinal(ctx, w.rdb, o)
				if err != nil {
					return
				}
				final = final && ok
			}
			w.note(key, final, now)
		}
		if iter.Err() != nil {
			return
		}
	}
	w.mu.Lock()
	for key, since := range w.allFinal {
		if !present[key] {
			// Gone: how long it stayed after its owners were final.
			w.maxLinger = max(w.maxLinger, now.Sub(since)-time.Second) // seen a pass late at most
			delete(w.allFinal, key)
		}
	}
	w.mu.Unlock()
}

func (w *sideKeyWatch) note(key string, final bool, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seenKeys[key] {
		w.seenKeys[key] = true
		w.seen++
	}
	since, was := w.allFinal[key]
	switch {
	case !final:
		delete(w.allFinal, key)
	case !was:
		w.allFinal[key] = now
	case now.Sub(since) > sideKeyGrace:
		w.outlived[key] = now.Sub(since)
	}
}

// owners are the tasks a side key belongs to.
func (w *sideKeyWatch) owners(ctx context.Context, key string) ([]string, error) {
	if strings.HasPrefix(key, "pdfexport:credentials:") {
		owner, err := w.rdb.HGet(ctx, key, "owner").Result()
		if err == redis.Nil {
			return nil, nil
		}
		return []string{owner}, err
	}
	fields, err := w.rdb.HKeys(ctx, key).Result()
	var owners []string
	for _, f := range fields {
		if id, ok := strings.CutPrefix(f, "o:"); ok {
			owners = append(owners, id)
		}
	}
	return owners, err
}

// record stops the watch after a last pass and writes its findings into sc;
// a key that outlived its owners fails the test.
func (w *sideKeyWatch) record(t *testing.T, sc *Scenario) {
	t.Helper()
	time.Sleep(sideKeyGrace) // the last exports' releases and sweeps
	w.pass(context.Background())
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	left, _ := w.rdb.Keys(context.Background(), "pdfexport:credentials:{*}").Result()
	docs, _ := w.rdb.Keys(context.Background(), "pdfexport:html:{*}").Result()
	sc.SideKeys = w.seen
	sc.SideKeysLeft = len(left) + len(docs)
	sc.SideKeysOutlived = len(w.outlived)
	sc.SideKeyLingerMS = w.maxLinger.Milliseconds()
	for key, d := range w.outlived {
		t.Errorf("%s outlived the final state of its last owner by %s", key, d.Round(time.Second))
	}
	if sc.SideKeysLeft > 0 {
		t.Errorf("side-stored keys left after every export was final: %v %v", left, docs)
	}
}

// privateSiteServer answers /<label> only with that label's token.
type privateSiteServer struct {
	url, host string
	mu        sync.Mutex
	denied    int
}

func (s *privateSiteServer) token(label string) string { return "Bearer soak-" + label }

func (s *privateSiteServer) refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denied
}

func privateSite(t *testing.T) *privateSiteServer {
	t.Helper()
	s := &privateSiteServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		label := strings.TrimPrefix(r.URL.Path, "/")
		if !strings.HasPrefix(label, "soak-") {
			http.NotFound(w, r) // a favicon, say
			return
		}
		if r.Header.Get("Authorization") != s.token(label) {
			s.mu.Lock()
			s.denied++
			s.mu.Unlock()
			http.Error(w, "login required", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, page(label, 0))
	}))
	t.Cleanup(srv.Close)
	s.url, s.host = srv.URL, strings.TrimPrefix(srv.URL, "http://")
	return s
}
