package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/internal/lock"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
	"github.com/pdfexport/pdfexport/internal/tasks"
)

// The handler's decisions, fast: storage, renderer and gate in memory behind
// the handler's own interfaces, so each path runs in microseconds. What
// needs the real thing (a lease that renews and is lost, Chromium, Redis,
// retries counted by asynq) is in handler_test.go and the worker's tests.

// scriptedGate answers Enter with the next of its entries, and records
// ForgetStored calls.
type scriptedGate struct {
	mu      sync.Mutex
	entries []lock.Entry
	forgot  []string
}

func (g *scriptedGate) Enter(context.Context, string, string) (lock.Entry, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.entries) == 0 {
		return lock.Entry{Result: lock.FailOpen}, nil
	}
	e := g.entries[0]
	if len(g.entries) > 1 {
		g.entries = g.entries[1:]
	}
	return e, nil
}

func (g *scriptedGate) ForgetStored(_ context.Context, _, etag string) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgot = append(g.forgot, etag)
	return true, nil
}

// countingRenderer renders a fixed PDF, or fails with err, and counts.
type countingRenderer struct {
	mu    sync.Mutex
	n     int
	err   error
	stats render.Stats
}

func (c *countingRenderer) Render(ctx context.Context, _ render.Source, _ spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	if c.err != nil {
		return render.Stats{}, c.err
	}
	st := c.stats
	st.Pages = max(st.Pages, 1)
	if err := sink(ctx, strings.NewReader("%PDF-1.7 fast")); err != nil {
		return st, fmt.Errorf("%w: %w", render.ErrSink, err) // as the renderer reports a failed sink
	}
	return st, nil
}

func (c *countingRenderer) renders() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// failingStore fails every Create.
type failingStore struct{ memStore }

func (f *failingStore) Create(context.Context, string, io.Reader, storage.PutOptions) (storage.Object, error) {
	return storage.Object{}, errors.New("disk full")
}

// resultOf runs the decision part of one task (after decoding: stat, gate,
// render, store, result) and returns its result and error.
func resultOf(t *testing.T, h *Handler, env spec.Envelope) (spec.Result, error) {
	t.Helper()
	if err := env.Validate(h.cfg.Hosts); err != nil {
		t.Fatal(err)
	}
	return h.export(context.Background(), h.cfg.Logger, job{Envelope: env}, env.ArtifactKey())
}

func fastHandler(t *testing.T, store Store, r Renderer, g Gate) *Handler {
	t.Helper()
	h, err := NewHandler(Config{Store: store, Renderer: r, Gate: g, Logger: slog.New(slog.DiscardHandler), Hostname: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func fastEnvelope(version string) spec.Envelope {
	return spec.Envelope{V: 1, ManualID: "m", Version: version, Source: spec.EnvelopeSource{HTML: "<h1>x</h1>"}}
}

func TestHandler_Decisions(t *testing.T) {
	permanent := errors.New("page said 404")
	tests := []struct {
		name      string
		stored    bool // the artifact is in storage before the task
		gate      []lock.Entry
		renderErr error
		store     func() Store
		// want
		renders   int
		rendered  bool
		failOpen  bool
		final     bool // the error carries SkipRetry
		wantErr   string
		forgotten int
	}{
		{name: "stored already: reuse, no gate, no render", stored: true, renders: 0},
		{name: "fail-open: render without the lock", gate: []lock.Entry{{Result: lock.FailOpen}}, renders: 1, rendered: true, failOpen: true},
		{name: "another worker released it stored: reuse", gate: []lock.Entry{{Result: lock.Released, Outcome: lock.Outcome{Status: lock.StatusStored, ETag: "1"}}},
			stored: false, renders: 0, wantErr: "missing"},
		{name: "render error the page caused: final", gate: []lock.Entry{{Result: lock.FailOpen}}, renderErr: permanent, renders: 1, final: true, wantErr: "404"},
		{name: "browser crashed: retried", gate: []lock.Entry{{Result: lock.FailOpen}}, renderErr: render.ErrBrowserCrashed, renders: 1, final: false, wantErr: "crash"},
		{name: "storage failing: retried", gate: []lock.Entry{{Result: lock.FailOpen}}, store: func() Store { return &failingStore{memStore{objs: map[string]storage.Object{}}} },
			renders: 1, final: false, wantErr: "disk full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var store Store = &memStore{objs: map[string]storage.Object{}}
			if tc.store != nil {
				store = tc.store()
			}
			env := fastEnvelope("1")
			if tc.stored {
				obj, err := store.Create(context.Background(), env.ArtifactKey(), strings.NewReader("%PDF"), storage.PutOptions{})
				if err != nil {
					t.Fatal(err)
				}
				info := `{"etag":"` + obj.ETag + `","pages":3}` // what the rendering worker wrote beside it
				if _, err := store.Create(context.Background(), env.ArtifactKey()+".json", strings.NewReader(info), storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			renderer := &countingRenderer{err: tc.renderErr}
			gate := &scriptedGate{entries: tc.gate}
			res, err := resultOf(t, fastHandler(t, store, renderer, gate), env)
			if renderer.renders() != tc.renders {
				t.Errorf("%d renders, want %d", renderer.renders(), tc.renders)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.wantErr)):
				t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
			case tc.wantErr != "" && errors.Is(err, asynq.SkipRetry) != tc.final:
				t.Errorf("err %v: final %v, want %v", err, errors.Is(err, asynq.SkipRetry), tc.final)
			}
			if err == nil && (res.Rendered != tc.rendered || res.FailOpen != tc.failOpen || res.ArtifactKey != env.ArtifactKey()) {
				t.Errorf("result %+v: rendered %v fail_open %v, want %v %v", res, res.Rendered, res.FailOpen, tc.rendered, tc.failOpen)
			}
		})
	}
}

// TestHandler_StoredButGoneIsRenderedAgain: the gate says another worker
// stored the artifact, storage does not have it (deleted since): the handler
// erases that marker and races again; here it then renders fail-open.
func TestHandler_StoredButGoneIsRenderedAgain(t *testing.T) {
	store := &memStore{objs: map[string]storage.Object{}}
	gate := &scriptedGate{entries: []lock.Entry{
		{Result: lock.Released, Outcome: lock.Outcome{Status: lock.StatusStored, ETag: "gone"}},
		{Result: lock.FailOpen},
	}}
	renderer := &countingRenderer{}
	res, err := resultOf(t, fastHandler(t, store, renderer, gate), fastEnvelope("2"))
	if err != nil || !res.Rendered || renderer.renders() != 1 {
		t.Fatalf("result %+v, err %v, renders %d: want one render after the marker", res, err, renderer.renders())
	}
	if len(gate.forgot) != 1 || gate.forgot[0] != "gone" {
		t.Errorf("markers erased: %v, want the one naming etag gone", gate.forgot)
	}
}

// TestHandler_RefusesBadEnvelopesForGood: bad input is final and names the
// field; raw credentials in a queued payload never reach the renderer.
func TestHandler_RefusesBadEnvelopesForGood(t *testing.T) {
	renderer := &countingRenderer{}
	h := fastHandler(t, &memStore{objs: map[string]storage.Object{}}, renderer, &scriptedGate{})
	for body, field := range map[string]string{
		`{"v":1,"manual_id":"../x","version":"1","source":{"html":"x"}}`:                                                     "manual_id",
		`{"v":1,"manual_id":"m","version":"1","source":{"url":"https://a.example/","headers":{"A":"b"}}}`:                    "source.headers",
		`{"v":1,"manual_id":"m","version":"1","source":{"html":"x"},"traceparent":"00-zz"}`:                                  "traceparent",
		`{"v":1,"manual_id":"m","version":"1","source":{"html_ref":{"sha256":"` + strings.Repeat("a", 64) + `","bytes":3}}}`: "source.html_ref",
	} {
		err := h.ProcessTask(context.Background(), tasks.NewExportTask([]byte(body)))
		if !errors.Is(err, asynq.SkipRetry) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err %v, want a final error naming %s", body, err, field)
		}
	}
	if renderer.renders() != 0 {
		t.Errorf("%d renders of bad envelopes", renderer.renders())
	}
}

// TestClassify: the outcome of an attempt, one row per outcome and per
// ordering case of classify's rules; the last columns say what the handler
// does with it (finish the export as state, or leave it to the next
// attempt).
func TestClassify(t *testing.T) {
	ended := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPast()
	live := context.Background()
	asynqCancel := ended(context.Canceled) // asynq's cancel: the cause is the plain one
	shutdown := ended(errors.New("worker shutting down"))
	leaseLost := ended(lock.ErrLockLost)
	retryable := fmt.Errorf("rendering k: %w", render.ErrBrowserCrashed)
	finalErr := fmt.Errorf("bad input: %w", asynq.SkipRetry)
	beforeStart := fmt.Errorf("%w: %w", ErrCanceled, asynq.SkipRetry)
	tests := []struct {
		name              string
		ctx               context.Context
		err               error
		pageFault         bool
		marked            bool // a cancel request is recorded
		retried, maxRetry int
		// want
		verdict verdict
		asked   bool   // the cancel mark was read
		state   string // the final state recorded; "": not final
	}{
		{name: "completed", ctx: live, maxRetry: 3, verdict: verdictCompleted, state: spec.StateCompleted},
		{name: "completed beats a cancel mark", ctx: asynqCancel, marked: true, maxRetry: 3, verdict: verdictCompleted, state: spec.StateCompleted},
		{name: "retryable error: retry", ctx: live, err: retryable, retried: 1, maxRetry: 3, verdict: verdictRetry},
		{name: "last retry makes a retryable error final", ctx: live, err: retryable, retried: 3, maxRetry: 3, verdict: verdictExhausted, state: spec.StateFailed},
		{name: "final error: failed for good", ctx: live, err: finalErr, maxRetry: 3, verdict: verdictFailed, state: spec.StateFailed},
		{name: "canceled by request", ctx: asynqCancel, err: context.Canceled, marked: true, maxRetry: 3, verdict: verdictCanceled, asked: true, state: spec.StateCanceled},
		{name: "a cancel mark beats a render error", ctx: asynqCancel, err: retryable, marked: true, maxRetry: 3, verdict: verdictCanceled, asked: true, state: spec.StateCanceled},
		{name: "a cancel mark beats a final error", ctx: asynqCancel, err: finalErr, marked: true, maxRetry: 3, verdict: verdictCanceled, asked: true, state: spec.StateCanceled},
		{name: "a cancel mark beats the last retry", ctx: asynqCancel, err: retryable, marked: true, retried: 3, maxRetry: 3, verdict: verdictCanceled, asked: true, state: spec.StateCanceled},
		{name: "canceled before it started", ctx: live, err: beforeStart, maxRetry: 3, verdict: verdictCanceled, state: spec.StateCanceled},
		{name: "asynq's cancel without a mark: requeued", ctx: asynqCancel, err: retryable, maxRetry: 3, verdict: verdictRequeued, asked: true},
		{name: "shutdown beats a retryable error", ctx: shutdown, err: retryable, maxRetry: 3, verdict: verdictRequeued},
		{name: "shutdown beats the last retry", ctx: shutdown, err: retryable, retried: 3, maxRetry: 3, verdict: verdictRequeued},
		{name: "shutdown is no cancel, mark or not", ctx: shutdown, err: retryable, marked: true, maxRetry: 3, verdict: verdictRequeued},
		{name: "a final error beats shutdown", ctx: shutdown, err: finalErr, maxRetry: 3, verdict: verdictFailed, state: spec.StateFailed},
		{name: "a deadline is no cancel: retry", ctx: past, err: retryable, marked: true, retried: 1, maxRetry: 3, verdict: verdictRetry},
		{name: "a deadline on the last retry: final", ctx: past, err: retryable, retried: 3, maxRetry: 3, verdict: verdictExhausted, state: spec.StateFailed},
		// A step's attempt (a render, a post-processing): no retry count.
		{name: "page fault while the context runs: failed", ctx: live, err: errors.New("HTTP 404"), pageFault: true, maxRetry: notCounted, verdict: verdictFailed, state: spec.StateFailed},
		{name: "lease lost beats a page fault", ctx: leaseLost, err: errors.New("HTTP 404"), pageFault: true, maxRetry: notCounted, verdict: verdictRequeued},
		{name: "a deadline beats a page fault", ctx: past, err: errors.New("navigation stopped"), pageFault: true, maxRetry: notCounted, verdict: verdictRetry},
		{name: "a step's retryable error: retry", ctx: live, err: retryable, maxRetry: notCounted, verdict: verdictRetry},
		{name: "last retry beats a page fault's context check", ctx: past, err: retryable, pageFault: true, retried: 3, maxRetry: 3, verdict: verdictExhausted, state: spec.StateFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			got := classify(attempt{ctx: tc.ctx, err: tc.err, pageFault: tc.pageFault, retried: tc.retried, maxRetry: tc.maxRetry,
				marked: func() bool { asked = true; return tc.marked }})
			if got != tc.verdict {
				t.Errorf("classify = %s, want %s", got, tc.verdict)
			}
			if asked != tc.asked {
				t.Errorf("cancel mark read: %v, want %v (a Redis read only when asynq canceled the context)", asked, tc.asked)
			}
			state := ""
			if got.final() {
				state = finalOf("t", nil, &spec.Result{}, got, tc.err).State
			}
			if state != tc.state {
				t.Errorf("final state %q, want %q", state, tc.state)
			}
		})
	}
}
