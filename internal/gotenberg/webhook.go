package gotenberg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
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

// webhook is the asynchronous form's headers, checked.
type webhook struct {
	url, errorURL, method, errorMethod string
	extra                              http.Header
	trace                              string
}

// webhookOf reads the webhook headers of r, if any, and checks them: the
// URLs against CALLBACK_ALLOWED_HOSTS, the methods, the extra headers.
func (h *handler) webhookOf(r *http.Request) (webhook, bool, error) {
	hk := webhook{url: r.Header.Get(webhookURLHeader), errorURL: r.Header.Get(webhookErrorURLHeader), trace: traceOf(r)}
	if hk.url == "" && hk.errorURL == "" {
		return webhook{}, false, nil
	}
	if h.cfg.Webhooks == nil {
		return webhook{}, true, &httpError{status: http.StatusNotImplemented, msg: "The header '" + webhookURLHeader + "' is not supported by this pdfexport: bin/api has no webhook delivery configured"}
	}
	var errs []string
	for _, u := range []struct{ header, v string }{{webhookURLHeader, hk.url}, {webhookErrorURLHeader, hk.errorURL}} {
		if u.v == "" {
			errs = append(errs, fmt.Sprintf("header '%s' is required", u.header))
		} else if err := h.cfg.Webhooks.CheckURL(u.v); err != nil {
			errs = append(errs, fmt.Sprintf("header '%s' is invalid: %s", u.header, strings.TrimPrefix(err.Error(), callback.ErrRefused.Error()+": ")))
		}
	}
	method := func(header string) string {
		m := strings.ToUpper(r.Header.Get(header))
		switch m {
		case "":
			return http.MethodPost
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			return m
		}
		errs = append(errs, fmt.Sprintf("header '%s' is invalid (got '%s', expected POST, PUT or PATCH)", header, printable(m)))
		return ""
	}
	hk.method, hk.errorMethod = method(webhookMethodHeader), method(webhookErrorMethodHeader)
	if raw := r.Header.Get(webhookExtraHeadersHeader); raw != "" {
		var extra map[string]string
		if err := json.Unmarshal([]byte(raw), &extra); err != nil {
			errs = append(errs, fmt.Sprintf("header '%s' is invalid: %v", webhookExtraHeadersHeader, err))
		} else if len(extra) > maxHookHeaders {
			errs = append(errs, fmt.Sprintf("header '%s' has more than %d headers", webhookExtraHeadersHeader, maxHookHeaders))
		}
		hk.extra = http.Header{}
		for k, v := range extra {
			if err := spec.CheckHeader(k, v); err != nil {
				errs = append(errs, fmt.Sprintf("header '%s' is invalid: %v", webhookExtraHeadersHeader, err))
				continue
			}
			switch http.CanonicalHeaderKey(k) {
			case "Host", "Content-Length", "Transfer-Encoding", "Connection":
				errs = append(errs, fmt.Sprintf("header '%s' may not set %s", webhookExtraHeadersHeader, k))
				continue
			}
			hk.extra.Set(k, v)
		}
	}
	if len(errs) > 0 {
		return webhook{}, true, badRequest("Invalid webhook: %s", strings.Join(errs, "\n"))
	}
	return hk, true, nil
}

// result is what an asynchronous request delivers: a body of a type.
type result struct {
	body        io.ReadCloser
	size        int64
	contentType string
	fileName    string
}

// async answers 204 at once and delivers what produce makes to the
// webhook, or its error to the error URL. The goroutine is the handler's:
// at most MaxWebhooks run, each within WebhookWait, and all end with
// Config.Background (bin/api's shutdown).
func (h *handler) async(w http.ResponseWriter, r *http.Request, hk webhook, produce func(ctx context.Context) (result, error)) {
	select {
	case h.hookSlot <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "5")
		writeText(w, http.StatusTooManyRequests, fmt.Sprintf("Too many webhook conversions in progress (%d); retry later", MaxWebhooks))
		return
	}
	name := outputName(r)
	go func() {
		defer func() { <-h.hookSlot }()
		ctx, cancel := context.WithTimeout(h.cfg.Background, WebhookWait)
		defer cancel()
		res, err := produce(ctx)
		if err != nil {
			h.deliverError(ctx, hk, err)
			return
		}
		defer res.body.Close()
		hdr := http.Header{}
		hdr.Set("Content-Type", res.contentType)
		if res.fileName == "" {
			res.fileName = name
		}
		hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": res.fileName}))
		hdr.Set(traceHeader, hk.trace)
		for k, v := range hk.extra {
			hdr[k] = v
		}
		if err := h.cfg.Webhooks.Send(ctx, callback.Upload{URL: hk.url, Method: hk.method, Header: hdr, Body: res.body, Size: res.size}); err != nil {
			h.log.WarnContext(ctx, "gotenberg: webhook delivery failed", "trace", hk.trace, "err", err)
			h.deliverError(ctx, hk, &httpError{status: http.StatusBadGateway, msg: "delivering the result to the webhook failed: " + err.Error()})
			return
		}
		h.log.InfoContext(ctx, "gotenberg: webhook delivered", "trace", hk.trace, "bytes", res.size)
	}()
	w.WriteHeader(http.StatusNoContent)
}

// deliverError sends Gotenberg's error body, {"status", "message"}, to
// the error URL.
func (h *handler) deliverError(ctx context.Context, hk webhook, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{status: http.StatusInternalServerError, msg: http.StatusText(http.StatusInternalServerError)}
	}
	body, _ := json.Marshal(map[string]any{"status": he.status, "message": he.msg})
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	hdr.Set(traceHeader, hk.trace)
	for k, v := range hk.extra {
		hdr[k] = v
	}
	if serr := h.cfg.Webhooks.Send(ctx, callback.Upload{URL: hk.errorURL, Method: hk.errorMethod, Header: hdr, Body: bytes.NewReader(body), Size: int64(len(body))}); serr != nil {
		h.log.WarnContext(ctx, "gotenberg: webhook error delivery failed", "trace", hk.trace, "err", serr)
		return
	}
	h.log.InfoContext(ctx, "gotenberg: webhook error delivered", "trace", hk.trace, "status", he.status)
}

// exportResult is produce for a conversion: its export, waited for, the
// PDF opened from storage, and the steps after the conversion run on it.
func (h *handler) exportResult(r *http.Request, p exportclient.Payload, steps []postStep) func(ctx context.Context) (result, error) {
	name := outputName(r)
	return func(ctx context.Context) (result, error) {
		key := ""
		if res, ok := h.storedOf(ctx, p); ok {
			key = res
		} else {
			k, err := h.export(ctx, r, p, WebhookWait)
			if err != nil {
				return result{}, err
			}
			key = k
		}
		obj, err := h.cfg.Store.Stat(ctx, key)
		if err != nil {
			return result{}, &httpError{status: http.StatusServiceUnavailable, msg: "storage unavailable"}
		}
		body, err := h.cfg.Store.Open(ctx, key)
		if err != nil {
			return result{}, &httpError{status: http.StatusServiceUnavailable, msg: "storage unavailable"}
		}
		mediaType, fileName := answerType(key, name)
		res := result{body: body, size: obj.Size, contentType: mediaType, fileName: fileName}
		if len(steps) == 0 {
			return res, nil
		}
		return h.runSteps(ctx, res, steps, name)
	}
}
