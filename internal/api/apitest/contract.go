// Package apitest is for tests only: Contract wraps the HTTP API's handler
// so that every request and response a test exchanges with it is checked
// against api/openapi.yaml with kin-openapi (openapi3filter). Drift between
// the spec and the server fails the test that saw it:
//
//   - a request to a route or method the spec does not declare must be
//     answered 404 or 405;
//   - a request the spec refuses (a wrong type, a missing or unknown field,
//     an envelope-only field, another Content-Type) must be answered 4xx;
//   - every response must be one the spec declares for the operation: its
//     status, its Content-Type and, for JSON, its body against the schema.
//
// A request the spec accepts may still be refused by the server (hosts not
// on ALLOWED_HOSTS, exactly one of url and html): the schema cannot say
// everything; the response then has to be a declared 4xx.
package apitest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// maxBody is how much of a response is kept for validation; a larger body
// (a big PDF) has its status and headers checked only.
const maxBody = 8 << 20

var (
	loadOnce sync.Once
	router   routers.Router
	loadErr  error
)

// specPath is api/openapi.yaml, found from this file's place in the module.
func specPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "api", "openapi.yaml")
}

func load() (routers.Router, error) {
	loadOnce.Do(func() {
		ctx := context.Background()
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(specPath())
		if err != nil {
			loadErr = err
			return
		}
		if err := doc.Validate(ctx); err != nil {
			loadErr = err
			return
		}
		// Tests serve on any address: match paths, not the example server.
		doc.Servers = openapi3.Servers{{URL: "/"}}
		openapi3filter.RegisterBodyDecoder("application/pdf", openapi3filter.FileBodyDecoder)
		router, loadErr = gorillamux.NewRouter(doc)
	})
	return router, loadErr
}

// Contract returns h checked against api/openapi.yaml; each violation is a
// t.Errorf naming the request.
func Contract(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	r, err := load()
	if err != nil {
		t.Fatalf("api/openapi.yaml: %v", err)
	}
	return &contract{t: t, router: r, next: h}
}

type contract struct {
	t      testing.TB
	router routers.Router
	next   http.Handler
}

func (c *contract) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_ = r.Body.Close()
	what := r.Method + " " + r.URL.RequestURI()

	route, params, routeErr := c.router.FindRoute(r)
	var in *openapi3filter.RequestValidationInput
	var reqErr error
	if routeErr == nil {
		check := r.Clone(r.Context())
		check.Body = io.NopCloser(bytes.NewReader(body))
		in = &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route,
			Options: &openapi3filter.Options{
				AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc, // the server checks the token
				SkipSettingDefaults: true,                                  // pass the body on as it came
				MultiError:          true,
			}}
		reqErr = openapi3filter.ValidateRequest(r.Context(), in)
	}

	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.next.ServeHTTP(rec, r)

	switch {
	case routeErr != nil:
		if rec.status != http.StatusNotFound && rec.status != http.StatusMethodNotAllowed {
			c.t.Errorf("contract: %s is not in api/openapi.yaml (%v), but the server answered %d", what, routeErr, rec.status)
		}
		return
	case reqErr != nil && (rec.status < 400 || rec.status > 499):
		c.t.Errorf("contract: api/openapi.yaml refuses %s (%v), but the server answered %d", what, reqErr, rec.status)
	}
	if !rec.wrote && rec.status == http.StatusOK && r.Context().Err() != nil {
		return // the client went away; nothing was answered
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.status, Header: rec.Header(),
		Body:    io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: rec.truncated}}
	if err := openapi3filter.ValidateResponse(r.Context(), out); err != nil {
		c.t.Errorf("contract: the answer %d to %s is not what api/openapi.yaml declares: %v\nbody: %.500s", rec.status, what, err, rec.body.Bytes())
	}
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
