package api

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/api/apitest"
)

// TestContract_RecordedExchanges validates every exchange the root
// module's tests recorded through apitest.Contract (`make test` runs them
// with PDFEXPORT_API_EXCHANGES first, then this) against api/openapi.yaml.
// It fails when nothing was recorded: a contract check that saw no
// exchange checked nothing.
func TestContract_RecordedExchanges(t *testing.T) {
	dir := os.Getenv(apitest.ExchangesEnv)
	if dir == "" {
		t.Skipf("%s is not set: `make test` records the root module's exchanges and then runs this", apitest.ExchangesEnv)
	}
	exchanges, err := apitest.ReadExchanges(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(exchanges) == 0 {
		t.Fatalf("no exchange recorded in %s=%s: the root module's tests did not run through apitest.Contract", apitest.ExchangesEnv, dir)
	}
	tests := map[string]int{}
	for _, ex := range exchanges {
		tests[ex.Test]++
		bad, err := Check(ex)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bad {
			t.Errorf("%s: %s", ex.Test, b)
		}
	}
	t.Logf("%d exchanges of %d tests validated", len(exchanges), len(tests))
}

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
			ex := apitest.Exchange{Test: t.Name(), Method: tt.method, Target: tt.url, Header: http.Header{}, Body: []byte(tt.body),
				Status: tt.status, Wrote: true, ResponseHeader: http.Header{}, ResponseBody: []byte(tt.answer)}
			if tt.ctype != "" {
				ex.Header.Set("Content-Type", tt.ctype)
			}
			if tt.answer != "" {
				ex.ResponseHeader.Set("Content-Type", "application/json")
			}
			bad, err := Check(ex)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(bad, "\n")
			switch {
			case tt.want == "" && got != "":
				t.Errorf("reported:\n%s", got)
			case tt.want != "" && !strings.Contains(got, tt.want):
				t.Errorf("reported %q, want a report saying %q", got, tt.want)
			}
		})
	}
}
