// Package api is the HTTP API for API servers that are not written in Go:
// POST /v1/exports enqueues an export (the task payload as JSON, the same
// validation as exportclient), GET /v1/exports/{id} reports its state and
// result (?wait=30s: as soon as it is final), GET /v1/exports/{id}/pdf
// delivers the PDF, DELETE /v1/exports/{id} cancels it, GET /healthz answers
// 200. With a token, every route but /healthz wants "Authorization: Bearer
// <token>". Its contract is api/openapi.yaml; the tests check the two
// against each other. bin/api serves it (enqueue serve is an alias).
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/config"
	"github.com/pdfexport/pdfexport/internal/redact"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// Config configures the API.
type Config struct {
	Client *exportclient.Client // required
	// Token, when set, is the bearer token every route but /healthz wants.
	Token string
	// Store is the artifact storage (STORAGE_URL) GET /v1/exports/{id}/pdf
	// reads; nil answers that route 501.
	Store Artifacts
	// Logger; nil: slog.Default().
	Logger *slog.Logger
}

// api is an http.Handler with no global state.
type api struct {
	client *exportclient.Client
	token  string
	store  Artifacts
	log    *slog.Logger
	mux    *http.ServeMux
}

// New returns the API's handler.
func New(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &api{client: cfg.Client, token: cfg.Token, store: cfg.Store, log: cfg.Logger, mux: http.NewServeMux()}
	a.mux.HandleFunc("POST /v1/exports", a.create)
	a.mux.HandleFunc("GET /v1/exports/{id}", a.get)
	a.mux.HandleFunc("DELETE /v1/exports/{id}", a.cancel)
	a.mux.HandleFunc("GET /v1/exports/{id}/pdf", a.download)
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return traced(a, a.mux)
}

// ErrListen wraps a failure to listen on the address: a configuration error
// for the caller (the address is taken or invalid), not a runtime failure.
var ErrListen = errors.New("api: listen")

// Serve listens on addr and serves h until ctx ends, then shuts down
// gracefully (10 s for requests in flight). It returns nil after a shutdown
// that ctx asked for, an error wrapping ErrListen when addr cannot be
// listened on, and the server's error otherwise.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w on %s: %w", ErrListen, addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Above the longest long-poll; downloads stream under their own
		// per-write deadlines (http.ResponseController).
		WriteTimeout: MaxWait + 30*time.Second,
		IdleTimeout:  120 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("enqueue API listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	<-errc
	return nil
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.token != "" && r.URL.Path != "/healthz" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pdfexport"`)
			writeJSON(w, http.StatusUnauthorized, apiError{Error: "missing or wrong bearer token"})
			return
		}
	}
	a.mux.ServeHTTP(w, r)
}

type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

type createResponse struct {
	TaskID      string `json:"task_id"`
	StatusURL   string `json:"status_url"`
	ArtifactKey string `json:"artifact_key"`
}

type statusResponse struct {
	State  exportclient.State   `json:"state"`
	Result *exportclient.Result `json:"result"`
	Error  string               `json:"error,omitempty"`
}

func (a *api) create(w http.ResponseWriter, r *http.Request) {
	// Only application/json: a body without a Content-Type, or as text or
	// a form, is what a page on another site can POST without a preflight.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, apiError{Error: "Content-Type must be application/json", Field: "Content-Type"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, spec.MaxPayloadBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: fmt.Sprintf("payload larger than %d bytes", spec.MaxPayloadBytes), Field: "payload"})
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, apiError{Error: "reading body: " + err.Error(), Field: "payload"})
		return
	}
	p, err := exportclient.DecodePayload(body)
	if err != nil {
		a.badRequest(w, err)
		return
	}
	var opts []exportclient.EnqueueOption
	if q := r.URL.Query().Get("queue"); q != "" {
		opts = append(opts, exportclient.Queue(q))
	}
	job, err := a.client.EnqueuePayload(r.Context(), p, opts...)
	switch {
	case errors.Is(err, exportclient.ErrInvalid):
		a.badRequest(w, err)
		return
	case err != nil:
		a.log.ErrorContext(r.Context(), "enqueue failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "queue unavailable, retry later"})
		return
	}
	a.log.InfoContext(r.Context(), "export enqueued", "task_id", job.TaskID, "manual_id", p.ManualID, "version", p.Version, "key", job.ArtifactKey)
	w.Header().Set("Location", "/v1/exports/"+job.TaskID)
	writeJSON(w, http.StatusAccepted, createResponse{TaskID: job.TaskID, StatusURL: "/v1/exports/" + job.TaskID, ArtifactKey: job.ArtifactKey})
}

func (a *api) badRequest(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: spec.FirstField(err)})
}

// MaxWait bounds GET /v1/exports/{id}?wait=.
const MaxWait = 60 * time.Second

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var st exportclient.Status
	var err error
	if raw := r.URL.Query().Get("wait"); raw != "" {
		wait, perr := parseWait(raw)
		if perr != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Error: perr.Error(), Field: "wait"})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		st, err = a.client.Wait(ctx, id, time.Second)
		cancel()
		if err != nil && ctx.Err() != nil && r.Context().Err() == nil && st.TaskID != "" {
			err = nil // the wait ended first: answer with the state it had
		}
	} else {
		st, err = a.client.Status(r.Context(), id)
	}
	if a.failed(w, r, err) {
		return
	}
	writeJSON(w, http.StatusOK, statusResponse{State: st.State, Result: st.Result, Error: st.Error})
}

// parseWait reads ?wait= as a Go duration ("30s", "1m") or whole seconds.
func parseWait(raw string) (time.Duration, error) {
	d, err := time.ParseDuration(raw)
	if err != nil {
		n, aerr := strconv.Atoi(raw)
		if aerr != nil {
			return 0, fmt.Errorf("wait: must be a duration like 30s or a number of seconds, got %q", raw)
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 || d > MaxWait {
		return 0, fmt.Errorf("wait: must be more than 0 and at most %s, got %s", MaxWait, d)
	}
	return d, nil
}

func (a *api) cancel(w http.ResponseWriter, r *http.Request) {
	st, err := a.client.Cancel(r.Context(), r.PathValue("id"))
	if errors.Is(err, exportclient.ErrFinal) {
		writeJSON(w, http.StatusConflict, statusResponse{State: st.State, Result: st.Result,
			Error: fmt.Sprintf("the export is %s already; there is nothing to cancel", st.State)})
		return
	}
	if a.failed(w, r, err) {
		return
	}
	code := http.StatusOK
	if !st.Final() {
		code = http.StatusAccepted // still stopping
	}
	a.log.Info("export cancel requested", "task_id", r.PathValue("id"), "state", st.State)
	writeJSON(w, code, statusResponse{State: st.State, Result: st.Result, Error: st.Error})
}

// failed answers err, if any, and reports whether it did.
func (a *api) failed(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, exportclient.ErrNotFound):
		writeJSON(w, http.StatusNotFound, apiError{Error: "no export with this id (unknown, or its retention ended)"})
	case r.Context().Err() != nil:
		// The client went away; nobody reads an answer.
	default:
		a.log.Error("request failed", "path", r.URL.Path, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "queue unavailable, retry later"})
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ErrStorage wraps a failure to open the artifact storage at start (exit 3).
var ErrStorage = errors.New("api: artifact storage")

// Run serves the API of cfg on addr until ctx ends: bin/api and enqueue
// serve. It opens the artifact storage (STORAGE_URL) for downloads; an error
// wraps ErrStorage or ErrListen, or is the server's.
func Run(ctx context.Context, cfg config.Config, addr string, client *exportclient.Client, log *slog.Logger) error {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	storeCfg := cfg.Storage()
	storeCfg.Logger = log
	store, err := storage.Open(sctx, storeCfg)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: opening %s: %w", ErrStorage, redact.URL(cfg.StorageURL), err)
	}
	return Serve(ctx, addr, New(Config{Client: client, Token: cfg.APIToken, Store: store, Logger: log}), log)
}
