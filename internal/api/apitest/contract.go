// Package apitest is for tests only: Contract wraps the HTTP API's handler
// so that every request and response a test exchanges with it is recorded,
// to be checked against api/openapi.yaml with kin-openapi by the nested
// module in api/ (api/contract_test.go). The validator lives there so that
// this module, which API servers import for exportclient, requires no
// OpenAPI library: `make test` sets ExchangesEnv for this module's tests,
// then runs api/'s, which validates every recorded exchange and fails when
// there are none. Without ExchangesEnv, Contract passes requests through.
package apitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// ExchangesEnv names the directory Contract records exchanges into, one
// JSON file (an Exchange) each.
const ExchangesEnv = "PDFEXPORT_API_EXCHANGES"

// maxBody is how much of a response is kept for validation; a larger body
// (a big PDF) has its status and headers checked only.
const maxBody = 8 << 20

// Exchange is one request a test made and the answer the server gave.
type Exchange struct {
	Test   string      `json:"test"` // the test that made it
	Method string      `json:"method"`
	Target string      `json:"target"` // the request URI
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`

	Status int `json:"status"`
	// Wrote: the handler wrote a status or a body. ClientGone: the
	// client's context had ended when the handler returned (then an
	// unanswered request has nothing to check).
	Wrote          bool        `json:"wrote"`
	ClientGone     bool        `json:"client_gone"`
	ResponseHeader http.Header `json:"response_header"`
	ResponseBody   []byte      `json:"response_body"`
	Truncated      bool        `json:"truncated"` // the body was over maxBody and is not kept
}

// What is the exchange's name in reports.
func (e *Exchange) What() string { return e.Method + " " + e.Target }

// Contract returns h, recording each exchange into $ExchangesEnv when it is
// set; a recording that fails fails t.
func Contract(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	dir := os.Getenv(ExchangesEnv)
	if dir == "" {
		return h
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%s: %v", ExchangesEnv, err)
	}
	return &contract{t: t, dir: dir, next: h}
}

type contract struct {
	t    testing.TB
	dir  string
	next http.Handler
}

func (c *contract) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_ = r.Body.Close()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.next.ServeHTTP(rec, r)
	ex := Exchange{Test: c.t.Name(), Method: r.Method, Target: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body,
		Status: rec.status, Wrote: rec.wrote, ClientGone: r.Context().Err() != nil,
		ResponseHeader: rec.Header().Clone(), ResponseBody: rec.body.Bytes(), Truncated: rec.truncated}
	if err := write(c.dir, ex); err != nil {
		c.t.Errorf("contract: recording %s: %v", ex.What(), err)
	}
}

func write(dir string, ex Exchange) error {
	b, err := json.Marshal(ex)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "exchange-*.json.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	// Renamed once whole: a reader never sees half an exchange.
	return os.Rename(f.Name(), f.Name()[:len(f.Name())-len(".tmp")])
}

// ReadExchanges reads what Contract recorded into dir, in file name order.
func ReadExchanges(dir string) ([]Exchange, error) {
	names, err := filepath.Glob(filepath.Join(dir, "exchange-*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]Exchange, 0, len(names))
	var errs []error
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var ex Exchange
		if err := json.Unmarshal(b, &ex); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n, err))
			continue
		}
		out = append(out, ex)
	}
	return out, errors.Join(errs...)
}

// recorder passes the response on and keeps its status and body.
type recorder struct {
	http.ResponseWriter
	status    int
	wrote     bool
	body      bytes.Buffer
	truncated bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	if !r.truncated {
		if r.body.Len()+len(b) > maxBody {
			r.truncated = true
			r.body.Reset()
		} else {
			r.body.Write(b)
		}
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (the download
// sets per-write deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush implements http.Flusher.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
