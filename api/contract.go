package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/pdfexport/pdfexport/internal/api/apitest"
)

// Check reports how an exchange departs from api/openapi.yaml (nil: it does
// not):
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
func Check(ex apitest.Exchange) ([]string, error) {
	router, err := load()
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	ctx := context.Background()
	r := httptest.NewRequest(ex.Method, ex.Target, bytes.NewReader(ex.Body))
	r.Header = ex.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	what := ex.What()

	route, params, routeErr := router.FindRoute(r)
	if routeErr != nil {
		if ex.Status != http.StatusNotFound && ex.Status != http.StatusMethodNotAllowed {
			return []string{fmt.Sprintf("contract: %s is not in api/openapi.yaml (%v), but the server answered %d", what, routeErr, ex.Status)}, nil
		}
		return nil, nil
	}
	var bad []string
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc, // the server checks the token
			SkipSettingDefaults: true,                                  // the body as it came
			MultiError:          true,
		}}
	if reqErr := openapi3filter.ValidateRequest(ctx, in); reqErr != nil && (ex.Status < 400 || ex.Status > 499) {
		bad = append(bad, fmt.Sprintf("contract: api/openapi.yaml refuses %s (%v), but the server answered %d", what, reqErr, ex.Status))
	}
	if !ex.Wrote && ex.Status == http.StatusOK && ex.ClientGone {
		return bad, nil // the client went away; nothing was answered
	}
	header := ex.ResponseHeader
	if header == nil {
		header = http.Header{}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: ex.Status, Header: header,
		Body:    io.NopCloser(bytes.NewReader(ex.ResponseBody)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: ex.Truncated}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		bad = append(bad, fmt.Sprintf("contract: the answer %d to %s is not what api/openapi.yaml declares: %v\nbody: %.500s", ex.Status, what, err, ex.ResponseBody))
	}
	return bad, nil
}

var (
	loadOnce sync.Once
	router   routers.Router
	loadErr  error
)

// specPath is openapi.yaml beside this file.
func specPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "openapi.yaml")
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
