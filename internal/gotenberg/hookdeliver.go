package gotenberg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/delivery/callback"
)

// async answers 204 at once and delivers what produce makes to the
// webhook, or its error to the error URL, with the events. The goroutine
// is the handler's: at most MaxWebhooks run, each within WebhookWait, and
// all end with Config.Background (bin/api's shutdown).
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
			_ = h.deliverFailure(ctx, hk, err) // logged; one attempt in this process
			return
		}
		if res.fileName == "" {
			res.fileName = name
		}
		if err := h.deliverResult(ctx, hk, res); err != nil {
			_ = h.deliverFailure(ctx, hk, err)
		}
	}()
	w.WriteHeader(http.StatusNoContent)
}

// hookHeader is a delivery's header: the extra headers, then Gotenberg's
// own over them (the trace, the W3C trace context), as Gotenberg's client
// sets them.
func hookHeader(hk webhook) http.Header {
	hdr := http.Header{}
	for k, v := range hk.Extra {
		hdr.Set(k, v)
	}
	hdr.Set(traceHeader, hk.Trace)
	if hk.Traceparent != "" {
		hdr.Set("Traceparent", hk.Traceparent)
		if hk.Tracestate != "" {
			hdr.Set("Tracestate", hk.Tracestate)
		}
	}
	return hdr
}

// deliverResult sends res to the webhook URL, then the success event; it
// closes res's body. Its Content-Type and Content-Length are Gotenberg's
// over the extra headers, its Content-Disposition only when they have
// none.
func (h *handler) deliverResult(ctx context.Context, hk webhook, res result) error {
	defer res.body.Close()
	hdr := hookHeader(hk)
	hdr.Set("Content-Type", res.contentType)
	hdr.Set("Content-Length", strconv.FormatInt(res.size, 10))
	if _, ok := hk.Extra["Content-Disposition"]; !ok {
		hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": res.fileName}))
	}
	if err := h.cfg.Webhooks.Send(ctx, callback.Upload{URL: hk.URL, Method: hk.Method, Header: hdr, Body: res.body, Size: res.size}); err != nil {
		h.log.WarnContext(ctx, "gotenberg: webhook delivery failed", "trace", hk.Trace, "err", err)
		return fmt.Errorf("%w: %w", errDelivery, err)
	}
	h.log.InfoContext(ctx, "gotenberg: webhook delivered", "trace", hk.Trace, "bytes", res.size)
	h.sendEvent(ctx, hk, map[string]any{"event": "webhook.success"})
	return nil
}

// errDelivery: the webhook URL did not take the result.
var errDelivery = errors.New("sending the result to the webhook failed")

// deliverFailure sends Gotenberg's error body, {"status", "message"}, to
// the error URL if there is one, then the error event. The error is the
// error URL's refusal (the event is sent either way).
func (h *handler) deliverFailure(ctx context.Context, hk webhook, err error) error {
	status, msg := statusOf(err)
	var serr error
	if hk.ErrorURL != "" {
		body, _ := json.Marshal(map[string]any{"status": status, "message": msg})
		hdr := hookHeader(hk)
		hdr.Set("Content-Type", "application/json")
		if serr = h.cfg.Webhooks.Send(ctx, callback.Upload{URL: hk.ErrorURL, Method: hk.ErrorMethod, Header: hdr, Body: bytes.NewReader(body), Size: int64(len(body))}); serr != nil {
			h.log.WarnContext(ctx, "gotenberg: webhook error delivery failed", "trace", hk.Trace, "err", serr)
		} else {
			h.log.InfoContext(ctx, "gotenberg: webhook error delivered", "trace", hk.Trace, "status", status)
		}
	}
	h.sendEvent(ctx, hk, map[string]any{"event": "webhook.error", "error": map[string]any{"status": status, "message": msg}})
	return serr
}

// sendEvent POSTs an event to the events URL, if any: Gotenberg's
// {"event", "correlationId", "timestamp"} and what event adds. Events are
// notices: a failure is logged, not retried.
func (h *handler) sendEvent(ctx context.Context, hk webhook, event map[string]any) {
	if hk.EventsURL == "" {
		return
	}
	event["correlationId"] = hk.Trace
	event["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	body, _ := json.Marshal(event)
	hdr := hookHeader(hk)
	hdr.Set("Content-Type", "application/json")
	if err := h.cfg.Webhooks.Send(ctx, callback.Upload{URL: hk.EventsURL, Method: http.MethodPost, Header: hdr, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
		h.log.WarnContext(ctx, "gotenberg: webhook event not delivered", "trace", hk.Trace, "event", event["event"], "err", err)
	}
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
		res, err := h.openResult(ctx, key, name)
		if err != nil || len(steps) == 0 {
			return res, err
		}
		return h.runSteps(ctx, res, steps, name)
	}
}

// openResult opens the stored PDF under key as a result named name.
func (h *handler) openResult(ctx context.Context, key, name string) (result, error) {
	obj, err := h.cfg.Store.Stat(ctx, key)
	if err != nil {
		return result{}, &httpError{status: http.StatusServiceUnavailable, msg: "storage unavailable"}
	}
	body, err := h.cfg.Store.Open(ctx, key)
	if err != nil {
		return result{}, &httpError{status: http.StatusServiceUnavailable, msg: "storage unavailable"}
	}
	mediaType, fileName := answerType(key, name)
	return result{body: body, size: obj.Size, contentType: mediaType, fileName: fileName}, nil
}
