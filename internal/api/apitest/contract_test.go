package apitest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestContract_RecordsEveryExchange: with ExchangesEnv set, each request
// and its answer are recorded whole, for api/'s validator; without it the
// handler is served as it is.
func TestContract_RecordsEveryExchange(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"task_id":"t"}`))
	})
	tests := []struct {
		name, method, target, body string
	}{
		{"post", "POST", "/v1/exports?x=1", `{"v":1}`},
		{"get", "GET", "/v1/exports/t", ""},
	}
	dir := t.TempDir()
	t.Setenv(ExchangesEnv, dir)
	srv := httptest.NewServer(Contract(t, h))
	t.Cleanup(srv.Close)
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.target, strings.NewReader(tt.body))
		req.Header.Set("X-Test", tt.name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	got, err := ReadExchanges(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tests) {
		t.Fatalf("%d exchanges recorded, want %d", len(got), len(tests))
	}
	for _, tt := range tests {
		found := false
		for _, ex := range got {
			if ex.Header.Get("X-Test") != tt.name {
				continue
			}
			found = true
			if ex.Test != t.Name() || ex.Method != tt.method || ex.Target != tt.target || string(ex.Body) != tt.body ||
				ex.Status != http.StatusAccepted || !ex.Wrote || ex.ResponseHeader.Get("Content-Type") != "application/json" ||
				string(ex.ResponseBody) != `{"task_id":"t"}` || ex.Truncated {
				t.Errorf("%s recorded as %+v", tt.name, ex)
			}
		}
		if !found {
			t.Errorf("%s not recorded", tt.name)
		}
	}
	t.Run("off", func(t *testing.T) {
		t.Setenv(ExchangesEnv, "")
		if _, wrapped := Contract(t, h).(*contract); wrapped {
			t.Errorf("without %s the handler is wrapped", ExchangesEnv)
		}
	})
}
