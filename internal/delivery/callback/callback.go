// Package callback sends what pdfexport delivers to a receiver's own URL:
// an export's final outcome (Post, which the pdf:callback task's handler in
// internal/tasks/callback calls once per attempt), POSTed signed the
// Standard Webhooks way (standardwebhooks.com) with every key of
// CALLBACK_SECRET, and a document (Send, Gotenberg's webhooks). An outcome
// carries its body and delivery id, fixed when the export became final, so
// every attempt sends the same bytes under the same webhook-id;
// webhook-timestamp and webhook-signature are fresh per attempt.
//
// The URL is checked again at delivery against CALLBACK_ALLOWED_HOSTS (the
// list may have changed since enqueue) and the connection goes through
// egress.Dialer: a name that resolves to loopback, a private network or
// cloud metadata is refused unless the list names that address exactly, and
// the address checked is the address dialled. Redirects are not followed.
package callback

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// Observer counts deliveries: delivered | retry | refused.
type Observer interface {
	CallbackDone(outcome string)
}

// Config configures a Deliverer.
type Config struct {
	// Keys are CALLBACK_SECRET's keys (spec.ParseCallbackSecrets); each
	// delivery carries one v1 signature per key. None refuses every delivery.
	Keys    [][]byte
	Allowed allowlist.List // CALLBACK_ALLOWED_HOSTS
	Timeout time.Duration  // one POST; default 10s
	Logger  *slog.Logger
	// Observer, if set, counts outcomes.
	Observer Observer
	// Lookup and Dial replace the resolver and the dialler (tests).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	// Now is the clock of the signature (tests); default time.Now.
	Now func() time.Time
}

// Deliverer sends outcomes and documents to receivers' URLs.
type Deliverer struct {
	cfg    Config
	client *http.Client
	tr     *http.Transport
}

// maxResponseBytes is how much of a receiver's answer is read (and thrown
// away) so the connection can be reused.
const maxResponseBytes = 64 << 10

// New returns a Deliverer; Close releases its idle connections.
func New(cfg Config) *Deliverer {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	dialer := egress.Dialer{List: cfg.Allowed, Lookup: cfg.Lookup, Dial: cfg.Dial}
	tr := &http.Transport{
		Proxy:                 nil, // the dialer's checks are the egress policy
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       60 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	client := &http.Client{
		Transport:     transport(tr),
		Timeout:       cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Deliverer{cfg: cfg, client: client, tr: tr}
}

// Close drops idle connections.
func (d *Deliverer) Close() { d.tr.CloseIdleConnections() }

// ErrRefused: the callback may not be delivered (no secret, a host off
// CALLBACK_ALLOWED_HOSTS, an address the list does not name). Final.
var ErrRefused = errors.New("callback refused")

// Outcome is one signed callback of a final export: its body (the
// spec.Final) and delivery id, the same on every attempt.
type Outcome struct {
	URL      string
	Body     []byte
	Delivery string
}

// Post delivers o once, signed: nil once the receiver answered 2xx; an
// error wrapping ErrRefused when o may not be delivered at all (final);
// any other error on another answer or a network failure (retry).
func (d *Deliverer) Post(ctx context.Context, o Outcome) error {
	log := d.cfg.Logger.With("delivery", o.Delivery, "url", redact.URL(o.URL))
	if len(d.cfg.Keys) == 0 {
		return d.Refuse(fmt.Errorf("%w: CALLBACK_SECRET is not set on this worker", ErrRefused), o.URL)
	}
	if fe := spec.ValidateCallbackURL(o.URL, d.cfg.Allowed); fe != nil {
		return d.Refuse(fmt.Errorf("%w: %w", ErrRefused, fe), o.URL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.URL, bytes.NewReader(o.Body))
	if err != nil {
		return d.Refuse(fmt.Errorf("%w: %w", ErrRefused, err), o.URL)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pdfexport/"+buildinfo.String())
	spec.SetCallbackHeaders(req.Header, d.cfg.Keys, o.Delivery, d.cfg.Now(), o.Body)
	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, egress.ErrRefused) {
			return d.Refuse(fmt.Errorf("%w: %s", ErrRefused, redact.Text(err.Error())), o.URL)
		}
		d.observe("retry")
		log.WarnContext(ctx, "callback delivery failed; retrying", "err", redact.Error(err))
		return fmt.Errorf("callback %s: %s", redact.URL(o.URL), redact.Text(err.Error()))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		d.observe("retry")
		log.WarnContext(ctx, "callback receiver did not accept; retrying", "status", resp.StatusCode)
		return fmt.Errorf("callback %s answered %s", redact.URL(o.URL), resp.Status)
	}
	d.observe("delivered")
	log.InfoContext(ctx, "callback delivered", "status", resp.StatusCode, "ms", time.Since(start).Milliseconds())
	return nil
}

// Refuse counts and logs a callback to rawURL that will never be
// delivered, and returns err.
func (d *Deliverer) Refuse(err error, rawURL string) error {
	d.observe("refused")
	d.cfg.Logger.Error("callback not delivered, for good", "url", redact.URL(rawURL), "err", err)
	return err
}

func (d *Deliverer) observe(outcome string) {
	if d.cfg.Observer != nil {
		d.cfg.Observer.CallbackDone(outcome)
	}
}

// Upload is a document delivered to a receiver's own URL with the method
// and headers the requester chose (Gotenberg's webhooks): not a signed
// outcome, but sent under the same rules as one.
type Upload struct {
	URL    string
	Method string // POST, PUT or PATCH
	Header http.Header
	Body   io.Reader
	Size   int64 // Body's length, -1 if unknown
}

// CheckURL refuses a URL that Send would refuse for its host: off
// CALLBACK_ALLOWED_HOSTS, or not http(s). The error wraps ErrRefused.
func (d *Deliverer) CheckURL(rawURL string) error {
	if fe := spec.ValidateCallbackURL(rawURL, d.cfg.Allowed); fe != nil {
		return fmt.Errorf("%w: %w", ErrRefused, fe)
	}
	return nil
}

// Send delivers u once, as a callback is delivered: the URL checked
// against CALLBACK_ALLOWED_HOSTS, the connection through the egress
// dialer, no redirect followed, within Config.Timeout for the answer's
// header. An answer other than 2xx is an error; a refused host or address
// wraps ErrRefused. It needs no CALLBACK_SECRET: the receiver chose the
// URL and the headers, and nothing is signed.
func (d *Deliverer) Send(ctx context.Context, u Upload) error {
	if err := d.CheckURL(u.URL); err != nil {
		return err
	}
	switch u.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return fmt.Errorf("%w: method %q (POST, PUT or PATCH)", ErrRefused, u.Method)
	}
	req, err := http.NewRequestWithContext(ctx, u.Method, u.URL, u.Body)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	for k, vs := range u.Header {
		req.Header[k] = vs
	}
	req.ContentLength = u.Size
	req.Header.Set("User-Agent", "pdfexport/"+buildinfo.String())
	// The body may be large: the client's Timeout would cut its upload
	// short, so only the answer's header waits at most Config.Timeout
	// (the transport's ResponseHeaderTimeout) and ctx bounds the rest.
	client := *d.client
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, egress.ErrRefused) {
			return fmt.Errorf("%w: %s", ErrRefused, redact.Text(err.Error()))
		}
		return fmt.Errorf("delivery to %s: %s", redact.URL(u.URL), redact.Text(err.Error()))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("delivery to %s answered %s", redact.URL(u.URL), resp.Status)
	}
	return nil
}
