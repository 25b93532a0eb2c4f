package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestAPI_CreateWantsJSONContentType: a POST a browser page can send
// cross-site without a preflight (no Content-Type, text/plain, a form) is
// refused with 415 even without API_TOKEN, before anything is enqueued;
// application/json, with parameters or in capitals, is accepted.
func TestAPI_CreateWantsJSONContentType(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := newTestAPI(t, redis.Addr(), "")
	valid := `{"v":1,"manual_id":"ops-guide","version":"2026.11.3","source":{"url":"https://docs.example.com/print"}}`
	post := func(ct string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/exports", strings.NewReader(valid))
		req.Header.Del("Content-Type")
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("Content-Type %q: non-JSON body %q", ct, raw)
		}
		return resp.StatusCode, out
	}
	for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/jsonp", "application/json-seq", "application/json;;"} {
		code, body := post(ct)
		if code != http.StatusUnsupportedMediaType || body["field"] != "Content-Type" || body["error"] == "" {
			t.Errorf("Content-Type %q: %d %v, want 415 naming the field Content-Type", ct, code, body)
		}
	}
	if n := redis.Client().DBSize(t.Context()).Val(); n != 0 {
		t.Errorf("refused POSTs left %d keys in Redis", n)
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		if code, body := post(ct); code != http.StatusAccepted {
			t.Errorf("Content-Type %q: %d %v, want 202", ct, code, body)
		}
	}
}
