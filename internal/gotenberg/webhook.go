package gotenberg

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/pdfexport/pdfexport/internal/delivery/callback"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Webhooks delivers an asynchronous conversion's result to the caller's
// URLs (internal/delivery/callback's Deliverer: CALLBACK_ALLOWED_HOSTS and the
// egress guard).
type Webhooks interface {
	CheckURL(rawURL string) error
	Send(ctx context.Context, u callback.Upload) error
}

// The asynchronous form's headers, Gotenberg's.
const (
	webhookURLHeader          = "Gotenberg-Webhook-Url"
	webhookErrorURLHeader     = "Gotenberg-Webhook-Error-Url"
	webhookEventsURLHeader    = "Gotenberg-Webhook-Events-Url"
	webhookMethodHeader       = "Gotenberg-Webhook-Method"
	webhookErrorMethodHeader  = "Gotenberg-Webhook-Error-Method"
	webhookExtraHeadersHeader = "Gotenberg-Webhook-Extra-Http-Headers"
)

// Bounds of the asynchronous form: how many run at once in one bin/api,
// and how long one waits for its export (the answer went at once, so
// Config.Wait, a caller's patience, does not apply).
const (
	MaxWebhooks    = 64
	WebhookWait    = 10 * time.Minute
	maxHookHeaders = 32
)

// webhook is the asynchronous form's headers, checked: where the result,
// the error and the events go. It is what a delivery needs and nothing of
// the request, so it outlives it (a delivery task carries it as JSON).
type webhook struct {
	URL         string            `json:"url"`
	Method      string            `json:"method"`
	ErrorURL    string            `json:"error_url,omitempty"`
	ErrorMethod string            `json:"error_method,omitempty"`
	EventsURL   string            `json:"events_url,omitempty"`
	Extra       map[string]string `json:"extra,omitempty"`
	Trace       string            `json:"trace"`
	// Traceparent and Tracestate continue the request's W3C trace on
	// every delivery, as Gotenberg's outbound requests do.
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// webhookOf reads the webhook headers of r, if any, and checks them in
// Gotenberg's order, answering the first problem in its words: an error
// or events URL is required beside the webhook URL; every URL is checked
// against CALLBACK_ALLOWED_HOSTS (403, as Gotenberg's filtered URL); then
// the methods and the extra headers (400). Without Gotenberg-Webhook-Url
// the request is synchronous, whatever else it carries.
func (h *handler) webhookOf(r *http.Request) (webhook, bool, error) {
	hk := webhook{URL: r.Header.Get(webhookURLHeader), ErrorURL: r.Header.Get(webhookErrorURLHeader),
		EventsURL: r.Header.Get(webhookEventsURLHeader), Trace: traceOf(r)}
	if hk.URL == "" {
		return webhook{}, false, nil
	}
	if h.cfg.Webhooks == nil {
		return webhook{}, true, &httpError{status: http.StatusNotImplemented, msg: "The header '" + webhookURLHeader + "' is not supported by this pdfexport: bin/api has no webhook delivery configured"}
	}
	if hk.ErrorURL == "" && hk.EventsURL == "" {
		return webhook{}, true, badRequest("At least one of '%s' or '%s' headers must be provided", webhookErrorURLHeader, webhookEventsURLHeader)
	}
	for _, u := range []struct{ header, v string }{{webhookURLHeader, hk.URL}, {webhookErrorURLHeader, hk.ErrorURL}, {webhookEventsURLHeader, hk.EventsURL}} {
		if u.v == "" {
			continue
		}
		if err := h.cfg.Webhooks.CheckURL(u.v); err != nil {
			return webhook{}, true, &httpError{status: http.StatusForbidden, msg: fmt.Sprintf("Forbidden: the header '%s' names a URL off CALLBACK_ALLOWED_HOSTS: %s",
				u.header, strings.TrimPrefix(err.Error(), callback.ErrRefused.Error()+": "))}
		}
	}
	var err error
	if hk.Method, err = webhookMethod(r, webhookMethodHeader); err != nil {
		return webhook{}, true, err
	}
	if hk.ErrorURL != "" {
		if hk.ErrorMethod, err = webhookMethod(r, webhookErrorMethodHeader); err != nil {
			return webhook{}, true, err
		}
	}
	if hk.Extra, err = webhookExtra(r.Header.Get(webhookExtraHeadersHeader)); err != nil {
		return webhook{}, true, err
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(r.Context(), carrier)
	hk.Traceparent, hk.Tracestate = carrier["traceparent"], carrier["tracestate"]
	return hk, true, nil
}

// webhookMethod is a method header: POST by default, else POST, PATCH or
// PUT (any case).
func webhookMethod(r *http.Request, header string) (string, error) {
	m := strings.ToUpper(r.Header.Get(header))
	switch m {
	case "":
		return http.MethodPost, nil
	case http.MethodPost, http.MethodPatch, http.MethodPut:
		return m, nil
	}
	return "", badRequest("Invalid '%s' header value: expected 'POST', 'PATCH' or 'PUT', but got '%s'", header, printable(m))
}

// webhookExtra is Gotenberg-Webhook-Extra-Http-Headers: a JSON object of
// at most maxHookHeaders valid headers, none of those that frame the
// request.
func webhookExtra(raw string) (map[string]string, error) {
	if raw == "" {
		return nil, nil
	}
	invalid := func(format string, args ...any) error {
		return badRequest("Invalid '%s' header value: %s", webhookExtraHeadersHeader, fmt.Sprintf(format, args...))
	}
	var extra map[string]string
	if err := json.Unmarshal([]byte(raw), &extra); err != nil {
		return nil, invalid("%v", err)
	}
	if len(extra) > maxHookHeaders {
		return nil, invalid("more than %d headers", maxHookHeaders)
	}
	out := make(map[string]string, len(extra))
	for k, v := range extra {
		if err := spec.CheckHeader(k, v); err != nil {
			return nil, invalid("%v", err)
		}
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection":
			return nil, invalid("it may not set %s", printable(k))
		}
		out[http.CanonicalHeaderKey(k)] = v
	}
	return out, nil
}

// result is what an asynchronous request delivers: a body of a type.
type result struct {
	body        io.ReadCloser
	size        int64
	contentType string
	fileName    string
}
