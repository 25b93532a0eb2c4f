package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testsupport"
)

func newTestAPI(t *testing.T, redisAddr, token string) *httptest.Server {
	t.Helper()
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redisAddr}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(New(c, token, slog.New(slog.DiscardHandler)))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: non-JSON body %q", method, url, raw)
	}
	return resp.StatusCode, out
}

func TestAPI_EnqueueAndStatus(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := newTestAPI(t, redis.Addr(), "s3cret")
	valid := `{"v":1,"manual_id":"ops-guide","version":"2026.11.3","source":{"url":"https://docs.example.com/print"}}`

	code, body := do(t, "POST", srv.URL+"/v1/exports", "s3cret", valid)
	if code != http.StatusAccepted || body["task_id"] == "" || !strings.HasPrefix(body["status_url"].(string), "/v1/exports/") {
		t.Fatalf("POST valid: %d %v", code, body)
	}
	code, st := do(t, "GET", srv.URL+body["status_url"].(string), "s3cret", "")
	if code != http.StatusOK || st["state"] != "pending" {
		t.Fatalf("GET status: %d %v", code, st)
	}
	if _, ok := st["result"]; !ok {
		t.Fatalf("status body lacks the result field: %v", st)
	}
}

func TestAPI_Rejections(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := newTestAPI(t, redis.Addr(), "s3cret")
	tests := []struct {
		name, method, path, token, body string
		wantCode                        int
		wantField                       string
	}{
		{"no token", "POST", "/v1/exports", "", `{}`, http.StatusUnauthorized, ""},
		{"wrong token", "POST", "/v1/exports", "nope", `{}`, http.StatusUnauthorized, ""},
		{"malformed", "POST", "/v1/exports", "s3cret", `{"v":1,`, http.StatusBadRequest, "payload"},
		{"unknown field", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"x":1}`, http.StatusBadRequest, "x"},
		{"wrong type", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":7,"version":"1","source":{"html":"x"}}`, http.StatusBadRequest, "manual_id"},
		{"ssrf", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"url":"http://[::ffff:169.254.169.254]/"}}`, http.StatusBadRequest, "source.url"},
		{"oversize", "POST", "/v1/exports", "s3cret", `{"v":1,"source":{"html":"` + strings.Repeat("a", spec.MaxPayloadBytes) + `"}}`, http.StatusRequestEntityTooLarge, "payload"},
		{"unknown task", "GET", "/v1/exports/nope", "s3cret", "", http.StatusNotFound, ""},
		{"queue no worker serves", "POST", "/v1/exports?queue=anything", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"}}`, http.StatusBadRequest, "queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, tt.method, srv.URL+tt.path, tt.token, tt.body)
			if code != tt.wantCode {
				t.Fatalf("status %d (%v), want %d", code, body, tt.wantCode)
			}
			if body["error"] == "" {
				t.Fatalf("no error message: %v", body)
			}
			if tt.wantField != "" && body["field"] != tt.wantField {
				t.Fatalf("field %v, want %s (%v)", body["field"], tt.wantField, body)
			}
		})
	}
}

func TestAPI_RedisDownIs503(t *testing.T) {
	srv := newTestAPI(t, "127.0.0.1:"+strconv.Itoa(testsupport.FreePort(t)), "")
	code, body := do(t, "POST", srv.URL+"/v1/exports", "", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"}}`)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("status %d %v, want 503", code, body)
	}
}
