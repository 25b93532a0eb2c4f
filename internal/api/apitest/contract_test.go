package apitest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// errs is a testing.TB that keeps what Contract reports.
type errs struct {
	testing.TB
	mu  sync.Mutex
	got []string
}

func (e *errs) Errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, fmt.Sprintf(format, args...))
}

func (e *errs) Helper() {}

// TestContract_CatchesDrift: answers and requests api/openapi.yaml does not
// declare are reported; those it declares are not.
func TestContract_CatchesDrift(t *testing.T) {
	const valid = `{"v":1,"manual_id":"ops","version":"1","source":{"url":"https://docs.example.com/p"}}`
	tests := []struct {
		name        string
		method, url string
		ctype, body string
		status      int
		answer      string
		want        string // "" no report; else a word of it
	}{
		{"declared answer", "POST", "/v1/exports", "application/json", valid, 202, `{"task_id":"t","status_url":"/v1/exports/t","artifact_key":"k"}`, ""},
		{"answer missing a required field", "POST", "/v1/exports", "application/json", valid, 202, `{"task_id":"t"}`, "not what api/openapi.yaml declares"},
		{"undeclared status", "POST", "/v1/exports", "application/json", valid, 418, `{"error":"teapot"}`, "not what api/openapi.yaml declares"},
		{"wrong type in an answer", "GET", "/v1/exports/t", "", "", 200, `{"state":"completed","result":{"pages":"many"}}`, "not what api/openapi.yaml declares"},
		{"envelope-only field accepted", "POST", "/v1/exports", "application/json",
			`{"v":1,"manual_id":"ops","version":"1","source":{"credentials_ref":{"id":"x"}}}`, 202,
			`{"task_id":"t","status_url":"/v1/exports/t","artifact_key":"k"}`, "refuses"},
		{"envelope-only field refused", "POST", "/v1/exports", "application/json",
			`{"v":1,"manual_id":"ops","version":"1","source":{"credentials_ref":{"id":"x"}}}`, 400,
			`{"error":"envelope-only","field":"source.credentials_ref"}`, ""},
		{"text body accepted", "POST", "/v1/exports", "text/plain", valid, 202, `{"task_id":"t","status_url":"/v1/exports/t","artifact_key":"k"}`, "refuses"},
		{"undeclared route served", "GET", "/v1/everything", "", "", 200, `{}`, "not in api/openapi.yaml"},
		{"undeclared method refused", "PUT", "/v1/exports", "", "", 405, ``, ""},
		{"null result", "GET", "/v1/exports/t", "", "", 200, `{"state":"pending","result":null}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &errs{TB: t}
			h := Contract(rec, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.answer != "" {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.answer))
			}))
			srv := httptest.NewServer(h)
			defer srv.Close()
			req, _ := http.NewRequest(tt.method, srv.URL+tt.url, strings.NewReader(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			srv.Close()
			got := strings.Join(rec.got, "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("reported:\n%s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("reported %q, want a report saying %q", got, tt.want)
			}
		})
	}
}
