// Package api is the HTTP enqueue API for API servers that are not written
// in Go: POST /v1/exports enqueues an export (the task payload as JSON, the
// same validation as exportclient), GET /v1/exports/{id} reports its state
// and result, GET /healthz answers 200. With a token, every route but
// /healthz wants "Authorization: Bearer <token>". Its contract is
// api/openapi.yaml; the tests check the two against each other. bin/api
// serves it (enqueue serve is an alias).
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// api is an http.Handler with no global state.
type api struct {
	client *exportclient.Client
	token  string
	log    *slog.Logger
	mux    *http.ServeMux
}

// New returns the API's handler. token "" serves without authentication.
func New(client *exportclient.Client, token string, log *slog.Logger) http.Handler {
	a := &api{client: client, token: token, log: log, mux: http.NewServeMux()}
	a.mux.HandleFunc("POST /v1/exports", a.create)
	a.mux.HandleFunc("GET /v1/exports/{id}", a.get)
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return a
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
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
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
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, apiError{Error: "Content-Type must be application/json"})
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
		a.log.Error("enqueue failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "queue unavailable, retry later"})
		return
	}
	a.log.Info("export enqueued", "task_id", job.TaskID, "manual_id", p.ManualID, "version", p.Version, "key", job.ArtifactKey)
	w.Header().Set("Location", "/v1/exports/"+job.TaskID)
	writeJSON(w, http.StatusAccepted, createResponse{TaskID: job.TaskID, StatusURL: "/v1/exports/" + job.TaskID, ArtifactKey: job.ArtifactKey})
}

func (a *api) badRequest(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: spec.FirstField(err)})
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	st, err := a.client.Status(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, exportclient.ErrNotFound):
		writeJSON(w, http.StatusNotFound, apiError{Error: "no export with this id (unknown, or its retention ended)"})
		return
	case err != nil:
		a.log.Error("status failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "queue unavailable, retry later"})
		return
	}
	writeJSON(w, http.StatusOK, statusResponse{State: st.State, Result: st.Result, Error: st.Error})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
