package gotenberg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/pdfexport/pdfexport/internal/delivery/callback"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// sent is one delivery a fakeHooks took.
type sent struct {
	url, method string
	header      http.Header
	body        []byte
}

// fakeHooks takes every delivery but to a host named "blocked".
type fakeHooks struct{ got chan sent }

func (f *fakeHooks) CheckURL(raw string) error {
	if strings.Contains(raw, "blocked") {
		return fmt.Errorf("%w: host blocked is not on the list", callback.ErrRefused)
	}
	return nil
}

func (f *fakeHooks) Send(ctx context.Context, u callback.Upload) error {
	b, err := io.ReadAll(u.Body)
	if err != nil {
		return err
	}
	if int64(len(b)) != u.Size {
		return errors.New("size mismatch")
	}
	f.got <- sent{url: u.URL, method: u.Method, header: u.Header, body: b}
	return nil
}

func (f *fakeHooks) next(t *testing.T) sent {
	t.Helper()
	select {
	case s := <-f.got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
		return sent{}
	}
}

func (f *fakeHooks) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-f.got:
		t.Errorf("an unexpected delivery to %s: %s", s.url, s.body)
	case <-time.After(100 * time.Millisecond):
	}
}

// mergeRequest is POST /forms/pdfengines/merge of one file with headers.
func mergeRequest(t *testing.T, name string, data []byte, header map[string]string) *http.Request {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, _ := mw.CreateFormFile("files", name)
	_, _ = w.Write(data)
	_ = mw.Close()
	req := httptest.NewRequest(http.MethodPost, "/forms/pdfengines/merge", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if tp := req.Header.Get("traceparent"); tp != "" { // bin/api's tracing middleware does this
		req = req.WithContext(propagation.TraceContext{}.Extract(req.Context(), propagation.HeaderCarrier(req.Header)))
	}
	return req
}

const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// TestWebhookDeliveries: the result goes to the webhook URL with
// Gotenberg's headers over the extra ones (but Content-Disposition), then
// the success event; a failure goes to the error URL and as the error
// event; the trace and the W3C trace context ride along.
func TestWebhookDeliveries(t *testing.T) {
	hooks := &fakeHooks{got: make(chan sent, 8)}
	h := New(Config{Webhooks: hooks, Logger: slog.New(slog.DiscardHandler)})
	serve := func(req *http.Request) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	t.Run("success with events", func(t *testing.T) {
		rec := serve(mergeRequest(t, "a.pdf", testsupport.TextPDF("Hook page"), map[string]string{
			webhookURLHeader: "http://hooks/result", webhookErrorURLHeader: "http://hooks/error", webhookEventsURLHeader: "http://hooks/events",
			webhookMethodHeader: "put", webhookExtraHeadersHeader: `{"X-Foo":"bar","Content-Disposition":"inline","Content-Type":"text/plain"}`,
			"Gotenberg-Trace": "tr-1", "traceparent": traceparent}))
		if rec.Code != http.StatusNoContent {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		s := hooks.next(t)
		if s.url != "http://hooks/result" || s.method != "PUT" || !bytes.HasPrefix(s.body, []byte("%PDF-")) ||
			s.header.Get("Content-Type") != "application/pdf" || s.header.Get("Content-Disposition") != "inline" || s.header.Get("X-Foo") != "bar" ||
			s.header.Get("Gotenberg-Trace") != "tr-1" || !strings.Contains(s.header.Get("Traceparent"), "0af7651916cd43dd8448eb211c80319c") {
			t.Errorf("result: %s %s %v", s.method, s.url, s.header)
		}
		ev := hooks.next(t)
		var got map[string]any
		if err := json.Unmarshal(ev.body, &got); err != nil || ev.url != "http://hooks/events" || ev.method != "POST" ||
			got["event"] != "webhook.success" || got["correlationId"] != "tr-1" || got["timestamp"] == nil || ev.header.Get("Content-Type") != "application/json" {
			t.Errorf("event: %s %s %s %v", ev.method, ev.url, ev.body, err)
		}
		hooks.none(t)
	})
	t.Run("failure to the error URL", func(t *testing.T) {
		rec := serve(mergeRequest(t, "a.pdf", []byte("not a PDF"), map[string]string{
			webhookURLHeader: "http://hooks/result", webhookErrorURLHeader: "http://hooks/error", webhookErrorMethodHeader: "PATCH", "Gotenberg-Trace": "tr-2"}))
		if rec.Code != http.StatusNoContent {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		s := hooks.next(t)
		var got struct {
			Status  int    `json:"status"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(s.body, &got); err != nil || s.url != "http://hooks/error" || s.method != "PATCH" || got.Status != 400 || got.Message == "" ||
			s.header.Get("Gotenberg-Trace") != "tr-2" {
			t.Errorf("error: %s %s %s", s.method, s.url, s.body)
		}
		hooks.none(t)
	})
	t.Run("failure as an event only", func(t *testing.T) {
		serve(mergeRequest(t, "a.pdf", []byte("not a PDF"), map[string]string{webhookURLHeader: "http://hooks/result", webhookEventsURLHeader: "http://hooks/events"}))
		ev := hooks.next(t)
		var got struct {
			Event string `json:"event"`
			Error struct {
				Status int `json:"status"`
			} `json:"error"`
		}
		if err := json.Unmarshal(ev.body, &got); err != nil || ev.url != "http://hooks/events" || got.Event != "webhook.error" || got.Error.Status != 400 {
			t.Errorf("event: %s %s", ev.url, ev.body)
		}
		hooks.none(t)
	})
	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			header map[string]string
			code   int
			msg    string
		}{
			{map[string]string{webhookURLHeader: "http://hooks/r"}, 400, "At least one of 'Gotenberg-Webhook-Error-Url' or 'Gotenberg-Webhook-Events-Url' headers must be provided"},
			{map[string]string{webhookURLHeader: "http://blocked/r", webhookErrorURLHeader: "http://hooks/e"}, 403, "Forbidden: the header 'Gotenberg-Webhook-Url'"},
			{map[string]string{webhookURLHeader: "http://hooks/r", webhookEventsURLHeader: "http://blocked/e"}, 403, "Forbidden: the header 'Gotenberg-Webhook-Events-Url'"},
			{map[string]string{webhookURLHeader: "http://hooks/r", webhookErrorURLHeader: "http://hooks/e", webhookMethodHeader: "get"}, 400,
				"Invalid 'Gotenberg-Webhook-Method' header value: expected 'POST', 'PATCH' or 'PUT', but got 'GET'"},
			{map[string]string{webhookURLHeader: "http://hooks/r", webhookErrorURLHeader: "http://hooks/e", webhookErrorMethodHeader: "DELETE"}, 400,
				"Invalid 'Gotenberg-Webhook-Error-Method' header value"},
			{map[string]string{webhookURLHeader: "http://hooks/r", webhookErrorURLHeader: "http://hooks/e", webhookExtraHeadersHeader: "[1]"}, 400,
				"Invalid 'Gotenberg-Webhook-Extra-Http-Headers' header value: json: cannot unmarshal"},
			{map[string]string{webhookURLHeader: "http://hooks/r", webhookErrorURLHeader: "http://hooks/e", webhookExtraHeadersHeader: `{"Host":"x"}`}, 400,
				"Invalid 'Gotenberg-Webhook-Extra-Http-Headers' header value: header Host"},
			// Without the webhook URL the request is synchronous.
			{map[string]string{webhookErrorURLHeader: "http://hooks/e"}, 200, "%PDF-"},
		} {
			rec := serve(mergeRequest(t, "a.pdf", testsupport.TextPDF("Hook page"), c.header))
			if rec.Code != c.code || !strings.HasPrefix(rec.Body.String(), c.msg) {
				t.Errorf("%v: %d %.200q, want %d %q", c.header, rec.Code, rec.Body.String(), c.code, c.msg)
			}
		}
		hooks.none(t)
	})
}
