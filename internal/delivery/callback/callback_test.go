package callback

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// secret is a CALLBACK_SECRET entry: whsec_ and the base64 of a 24-byte key.
const secret = "whsec_dGVzdC1zZWNyZXQtMDEyMzQ1Njc4OWFi"

// receiver is a real HTTP server on loopback that records each request
// and answers with the next status of its script (200 once it runs out).
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	script   []int
	requests []received
}

type received struct {
	delivery, signature, contentType string
	body                             []byte
	path                             string
	header                           http.Header
}

func newReceiver(t *testing.T, script ...int) *receiver {
	r := &receiver{script: script}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests = append(r.requests, received{req.Header.Get(spec.WebhookIDHeader), req.Header.Get(spec.WebhookSignatureHeader),
			req.Header.Get("Content-Type"), body, req.URL.Path, req.Header.Clone()})
		code := http.StatusOK
		if len(r.script) > 0 {
			code, r.script = r.script[0], r.script[1:]
		}
		r.mu.Unlock()
		if code == http.StatusFound {
			http.Redirect(w, req, "/elsewhere", code)
			return
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}

func (r *receiver) host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

func outcome(t *testing.T, url string) Outcome {
	body, err := json.Marshal(spec.Final{TaskID: "t-1", State: spec.StateCompleted, ManualID: "ops", Version: "1",
		Result: &spec.Result{ArtifactKey: "ops/1/abc.pdf", Pages: 3}})
	if err != nil {
		t.Fatal(err)
	}
	return Outcome{URL: url, Delivery: "callback-t-1", Body: body}
}

func deliverer(cfg Config) *Deliverer {
	if cfg.Keys == nil {
		keys, err := spec.ParseCallbackSecrets(secret)
		if err != nil {
			panic(err)
		}
		cfg.Keys = keys
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	return New(cfg)
}

// TestDeliver_SignedAndStableAcrossRetries: a receiver that fails twice
// gets three POSTs of the same body under the same delivery id, each with a
// fresh signature that exportclient.VerifyCallback accepts; non-2xx answers
// are retryable errors, the 2xx ends the task.
func TestDeliver_SignedAndStableAcrossRetries(t *testing.T) {
	r := newReceiver(t, http.StatusServiceUnavailable, http.StatusInternalServerError)
	d := deliverer(Config{Allowed: allowlist.MustParse(r.host())})
	defer d.Close()
	tk := outcome(t, r.srv.URL+"/hooks/pdf")
	for attempt := 1; attempt <= 3; attempt++ {
		err := d.Post(context.Background(), tk)
		switch {
		case attempt < 3 && (err == nil || errors.Is(err, ErrRefused)):
			t.Fatalf("attempt %d: err = %v, want a retryable error", attempt, err)
		case attempt < 3 && !strings.Contains(err.Error(), "answered 50"):
			t.Errorf("attempt %d: error %q does not give the status", attempt, err)
		case attempt == 3 && err != nil:
			t.Fatalf("attempt 3: %v", err)
		}
	}
	reqs := r.got()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, q := range reqs {
		if q.delivery != "callback-t-1" || q.contentType != "application/json" || q.path != "/hooks/pdf" {
			t.Errorf("request %d: delivery %q, content type %q, path %q", i, q.delivery, q.contentType, q.path)
		}
		if string(q.body) != string(reqs[0].body) {
			t.Errorf("request %d: body changed between attempts", i)
		}
		if err := exportclient.VerifyCallback(q.header, q.body, secret); err != nil {
			t.Errorf("request %d: signature %q: %v", i, q.signature, err)
		}
	}
	var f spec.Final
	if err := json.Unmarshal(reqs[0].body, &f); err != nil || f.TaskID != "t-1" || f.State != "completed" || f.Result == nil || f.Result.Pages != 3 {
		t.Errorf("body %s (%v)", reqs[0].body, err)
	}
}

// TestDeliver_RefusedForGood: deliveries the worker must not make fail at
// once (SkipRetry) and never reach the receiver.
func TestDeliver_RefusedForGood(t *testing.T) {
	r := newReceiver(t)
	_, port, _ := strings.Cut(r.host(), ":")
	toLoopback := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	tests := []struct {
		name string
		cfg  Config
		url  string
	}{
		{"host no longer on the list", Config{Allowed: allowlist.MustParse("api.example.com")}, r.srv.URL + "/h"},
		{"name resolving to loopback", Config{Allowed: allowlist.MustParse("*.example.test"), Lookup: toLoopback}, "http://hooks.example.test:" + port + "/h"},
		{"no secret on the worker", Config{Keys: [][]byte{}, Allowed: allowlist.MustParse(r.host())}, r.srv.URL + "/h"},
		{"not http", Config{Allowed: allowlist.MustParse(r.host())}, "file:///etc/passwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deliverer(tt.cfg)
			defer d.Close()
			err := d.Post(context.Background(), outcome(t, tt.url))
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("err = %v, want a final refusal", err)
			}
		})
	}
	if n := len(r.got()); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
}

// TestDeliver_DoesNotFollowRedirects: a 302 is an answer like any non-2xx
// (retried), and its target is never requested.
func TestDeliver_DoesNotFollowRedirects(t *testing.T) {
	r := newReceiver(t, http.StatusFound)
	d := deliverer(Config{Allowed: allowlist.MustParse(r.host())})
	defer d.Close()
	err := d.Post(context.Background(), outcome(t, r.srv.URL+"/h"))
	if err == nil || errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
	if reqs := r.got(); len(reqs) != 1 || reqs[0].path != "/h" {
		t.Fatalf("requests %+v, want only /h", reqs)
	}
}
