package gotenberg

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// Queue is the part of exportclient a conversion uses.
type Queue interface {
	Validate(p exportclient.Payload) error
	EnqueuePayload(ctx context.Context, p exportclient.Payload, opts ...exportclient.EnqueueOption) (exportclient.Enqueued, error)
	Wait(ctx context.Context, taskID string, interval time.Duration) (exportclient.Status, error)
	Cancel(ctx context.Context, taskID string) (exportclient.Status, error)
}

// Store is the part of artifact storage a conversion's answer reads.
type Store interface {
	Stat(ctx context.Context, key string) (storage.Object, error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Config configures the routes.
type Config struct {
	Queue Queue // required
	Store Store // required
	// Stored answers an export from storage, as POST /v1/exports does:
	// its result and whether storage can answer for it. Nil: never.
	Stored func(ctx context.Context, p exportclient.Payload) (exportclient.Result, bool)
	// Caller is the queue a request's exports go to and the client that
	// owns them (the authenticated API client); nil, or an empty queue:
	// the client's default queue, no owner.
	Caller func(r *http.Request) (queue, owner string)
	// Wait bounds how long a conversion waits for its PDF; past it the
	// answer is 503, as Gotenberg's on its API timeout. 0: DefaultWait.
	Wait time.Duration
	// Version is what GET /version answers.
	Version string
	// Webhooks delivers the asynchronous conversions (webhook.go); nil
	// refuses the webhook headers.
	Webhooks Webhooks
	// Background bounds the asynchronous conversions, which outlive their
	// request: they end with it (bin/api's shutdown). Nil: never.
	Background context.Context
	// EngineJobs bounds the PDF-engine jobs (merge, metadata, encryption)
	// running at once in this process; 0: DefaultEngineJobs.
	EngineJobs int
	// Download fetches downloadFrom's files (NewDownloadClient); nil
	// refuses the field.
	Download *http.Client
	Logger   *slog.Logger
	// RootPath prefixes every route, as Gotenberg's --api-root-path: it
	// starts and ends with "/" (CheckRootPath). "": DefaultRootPath.
	RootPath string
	// HookTasks and Spool make the webhooks durable (hooktask.go): a
	// delivery is a task on WebhookQueue, enqueued before the 204, and an
	// engine route's output is stored first. Nil: a delivery lives in the
	// process that accepted it.
	HookTasks HookTasks
	Spool     Spool
	// Pending is the number of conversions waiting in the queue, the
	// gotenberg_chromium_requests_queue_size metric; nil: 0.
	Pending func() float64
}

// DefaultWait is Gotenberg's own API timeout.
const DefaultWait = 30 * time.Second

// handler serves the routes of Config.
type handler struct {
	cfg        Config
	log        *slog.Logger
	mux        *http.ServeMux
	formLimits limits
	engineSlot chan struct{}
	hookSlot   chan struct{} // one token per asynchronous conversion running
	metrics    http.Handler
}

// New returns the handler of Gotenberg's routes. It serves them at their
// Gotenberg paths under Config.RootPath; the caller mounts it for
// PathsAt(RootPath).Mounts() behind its authentication (Paths.Public
// without it).
func New(cfg Config) http.Handler { return newHandler(cfg) }

func newHandler(cfg Config) *handler {
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EngineJobs <= 0 {
		cfg.EngineJobs = DefaultEngineJobs
	}
	if cfg.Background == nil {
		cfg.Background = context.Background()
	}
	if cfg.RootPath == "" {
		cfg.RootPath = DefaultRootPath
	}
	if cfg.Caller == nil {
		cfg.Caller = func(*http.Request) (string, string) { return "", "" }
	}
	h := &handler{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), engineSlot: make(chan struct{}, cfg.EngineJobs),
		hookSlot: make(chan struct{}, MaxWebhooks),
		// A document may be MaxHTMLBytes with its assets inlined, and the
		// header and footer beside it: what POST /v1/exports takes.
		formLimits: limits{bytes: spec.MaxPayloadBytes, parts: maxParts, valueBytes: spec.MaxTemplateBytes}}
	h.metrics = newMetrics(cfg.Pending)
	h.handle("POST /forms/chromium/convert/url", h.convertURL)
	h.handle("POST /forms/chromium/convert/html", h.convertHTML)
	h.handle("POST /forms/chromium/convert/markdown", h.convertMarkdown)
	h.engineRoutes()
	h.screenshotRoutes()
	h.protocolRoutes()
	return h
}

// maxParts bounds a form's fields and files: Gotenberg's Chromium routes
// have fewer than 60 fields, and a document's assets are inlined into one
// document of at most 2 MiB.
const maxParts = 256

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	trace := r.Header.Get(traceHeader)
	if trace == "" {
		trace = newTrace()
		r.Header.Set(traceHeader, trace)
	}
	w.Header().Set(traceHeader, printable(trace))
	if h.unrouted(w, r) {
		return
	}
	h.mux.ServeHTTP(w, r)
}

func notImplemented(route, why string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeText(w, http.StatusNotImplemented, "The route "+route+" is not implemented by pdfexport: "+why)
	}
}

// health answers in Gotenberg's shape. Chromium runs in the workers, not
// here; bin/api is up when it answers, and the queue's health is the
// workers' /readyz.
func (h *handler) health(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "up",
		"details": map[string]any{"chromium": map[string]string{"status": "up", "timestamp": now}}})
}
