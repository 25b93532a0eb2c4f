package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api/apitest"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func newTestAPI(t *testing.T, redisAddr, token string) *httptest.Server {
	t.Helper()
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redisAddr}, AllowedHosts: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	srv := httptest.NewServer(apitest.Contract(t, New(Config{Client: c, Token: token, Logger: slog.New(slog.DiscardHandler)})))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if raw, ok := strings.CutPrefix(token, "raw:"); ok {
		req.Header.Set("Authorization", raw) // the header as given, no Bearer scheme added
	} else if token != "" {
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

// TestAPI_CredentialsTravelBesideTheTask: per-export credentials sent to the
// API are stored beside the task; the queued payload names them only, and
// the status shows no value.
func TestAPI_CredentialsTravelBesideTheTask(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := newTestAPI(t, redis.Addr(), "s3cret")
	req := `{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com/p","headers":{"authorization":"Bearer SECRET-7"},"cookies":[{"name":"sid","value":"SECRET-8"}]}}`
	code, body := do(t, "POST", srv.URL+"/v1/exports", "s3cret", req)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, body)
	}
	info, err := asynq.NewInspectorFromRedisClient(redis.Client()).GetTaskInfo("default", body["task_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	payload := string(info.Payload)
	if strings.Contains(payload, "SECRET") || !strings.Contains(payload, `"header_names":["Authorization"],"cookie_names":["sid"]`) {
		t.Errorf("queued payload: %s", payload)
	}
	stored, err := redis.Client().Keys(context.Background(), "pdfexport:credentials:{*}").Result()
	if err != nil || len(stored) != 1 {
		t.Errorf("credentials beside the task: %v %v", stored, err)
	}
	_, st := do(t, "GET", srv.URL+body["status_url"].(string), "s3cret", "")
	if b, _ := json.Marshal(st); strings.Contains(string(b), "SECRET") {
		t.Errorf("status shows a credential: %s", b)
	}
}

// TestAPI_EncryptionPasswordsTravelBesideTheTask: an encryption's
// passwords sent to the API are stored beside the task; the queued payload
// names them by reference, and neither it nor the status shows them.
func TestAPI_EncryptionPasswordsTravelBesideTheTask(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := newTestAPI(t, redis.Addr(), "s3cret")
	req := `{"v":1,"manual_id":"a","version":"1","source":{"html":"<p>x"},"options":{"metadata":{"title":"T"},"watermark":{"text":"DRAFT"},"encryption":{"user_password":"SECRET-U","owner_password":"SECRET-O","allow":["print"]}}}`
	code, body := do(t, "POST", srv.URL+"/v1/exports", "s3cret", req)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, body)
	}
	info, err := asynq.NewInspectorFromRedisClient(redis.Client()).GetTaskInfo("default", body["task_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if payload := string(info.Payload); strings.Contains(payload, "SECRET") || !strings.Contains(payload, `"encryption_ref":{"id":"`+body["task_id"].(string)+`"`) {
		t.Errorf("queued payload: %s", payload)
	}
	if n := redis.Client().Exists(context.Background(), "pdfexport:passwords:{"+body["task_id"].(string)+"}").Val(); n != 1 {
		t.Error("the passwords are not beside the task")
	}
	_, st := do(t, "GET", srv.URL+body["status_url"].(string), "s3cret", "")
	if b, _ := json.Marshal(st); strings.Contains(string(b), "SECRET") {
		t.Errorf("status shows a password: %s", b)
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
		{"token without Bearer", "POST", "/v1/exports", "raw:s3cret", `{}`, http.StatusUnauthorized, ""},
		{"token as Basic", "POST", "/v1/exports", "raw:Basic s3cret", `{}`, http.StatusUnauthorized, ""},
		{"malformed", "POST", "/v1/exports", "s3cret", `{"v":1,`, http.StatusBadRequest, "payload"},
		{"unknown field", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"x":1}`, http.StatusBadRequest, "x"},
		{"wrong type", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":7,"version":"1","source":{"html":"x"}}`, http.StatusBadRequest, "manual_id"},
		{"ssrf", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"url":"http://[::ffff:169.254.169.254]/"}}`, http.StatusBadRequest, "source.url"},
		{"oversize", "POST", "/v1/exports", "s3cret", `{"v":1,"source":{"html":"` + strings.Repeat("a", spec.MaxPayloadBytes) + `"}}`, http.StatusRequestEntityTooLarge, "payload"},
		{"unknown task", "GET", "/v1/exports/nope", "s3cret", "", http.StatusNotFound, ""},
		{"queue no worker serves", "POST", "/v1/exports?queue=anything", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"}}`, http.StatusBadRequest, "queue"},
		{"callbacks not allowed", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"callback":{"url":"https://evil.example.net/h"}}`, http.StatusBadRequest, "callback.url"},
		{"callback to metadata", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"callback":{"url":"http://169.254.169.254/latest"}}`, http.StatusBadRequest, "callback.url"},
		{"credentials without url", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x","headers":{"Authorization":"SECRET-1"}}}`, http.StatusBadRequest, "source.headers"},
		{"forbidden header", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com/p","headers":{"Host":"SECRET-1"}}}`, http.StatusBadRequest, "source.headers"},
		{"bad cookie", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"url":"https://docs.example.com/p","cookies":[{"name":"sid","value":"SECRET 1"}]}}`, http.StatusBadRequest, "source.cookies[0]"},
		{"encryption_ref in a request", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"encryption_ref":{"id":"other","identity":"x"}}`, http.StatusBadRequest, "encryption_ref"},
		{"same passwords", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"encryption":{"user_password":"SECRET-9","owner_password":"SECRET-9"}}}`, http.StatusBadRequest, "options.encryption.user_password"},
		{"unknown permission", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"encryption":{"owner_password":"SECRET-9","allow":["fly"]}}}`, http.StatusBadRequest, "options.encryption.allow[0]"},
		{"watermark opacity", "POST", "/v1/exports", "s3cret", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"},"options":{"watermark":{"text":"D","opacity":3}}}`, http.StatusBadRequest, "options.watermark.opacity"},
		{"wait not a duration", "GET", "/v1/exports/nope?wait=soon", "s3cret", "", http.StatusBadRequest, "wait"},
		{"wait too long", "GET", "/v1/exports/nope?wait=5m", "s3cret", "", http.StatusBadRequest, "wait"},
		{"long-poll unknown task", "GET", "/v1/exports/nope?wait=1s", "s3cret", "", http.StatusNotFound, ""},
		{"cancel unknown task", "DELETE", "/v1/exports/nope", "s3cret", "", http.StatusNotFound, ""},
		{"pdf without storage", "GET", "/v1/exports/nope/pdf", "s3cret", "", http.StatusNotImplemented, ""},
		{"pdf without token", "GET", "/v1/exports/nope/pdf", "", "", http.StatusUnauthorized, ""},
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
			if msg, _ := body["error"].(string); strings.Contains(msg, "SECRET") {
				t.Fatalf("the error shows a credential: %v", body)
			}
		})
	}
}

// TestAPI_LongPollWakesOnCancel: a long-poll on a pending export answers
// as soon as another client cancels it (200 canceled), long before its
// wait ends; the PDF of a canceled export is a 409; cancel again is a 409.
func TestAPI_LongPollWakesOnCancel(t *testing.T) {
	redis := testsupport.StartRedis(t)
	srv := newTestAPI(t, redis.Addr(), "")
	code, body := do(t, "POST", srv.URL+"/v1/exports", "", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"}}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, body)
	}
	id := body["task_id"].(string)
	type answer struct {
		code int
		body map[string]any
		took time.Duration
	}
	polled := make(chan answer, 1)
	go func() {
		start := time.Now()
		code, body := do(t, "GET", srv.URL+"/v1/exports/"+id+"?wait=20", "", "")
		polled <- answer{code, body, time.Since(start)}
	}()
	time.Sleep(300 * time.Millisecond)
	if code, body := do(t, "DELETE", srv.URL+"/v1/exports/"+id, "", ""); code != http.StatusOK || body["state"] != "canceled" {
		t.Fatalf("DELETE: %d %v", code, body)
	}
	a := <-polled
	if a.code != http.StatusOK || a.body["state"] != "canceled" || a.took > 10*time.Second {
		t.Fatalf("long-poll: %d %v after %s", a.code, a.body, a.took)
	}
	if code, body := do(t, "DELETE", srv.URL+"/v1/exports/"+id, "", ""); code != http.StatusConflict || body["state"] != "canceled" {
		t.Errorf("second DELETE: %d %v, want 409 canceled", code, body)
	}
	if code, body := do(t, "GET", srv.URL+"/v1/exports/"+id+"?wait=1s", "", ""); code != http.StatusOK || body["state"] != "canceled" {
		t.Errorf("status: %d %v", code, body)
	}
}

func TestAPI_RedisDownIs503(t *testing.T) {
	srv := newTestAPI(t, "127.0.0.1:"+strconv.Itoa(testsupport.FreePort(t)), "")
	code, body := do(t, "POST", srv.URL+"/v1/exports", "", `{"v":1,"manual_id":"a","version":"1","source":{"html":"x"}}`)
	if code != http.StatusServiceUnavailable {
		t.Fatalf("status %d %v, want 503", code, body)
	}
}
