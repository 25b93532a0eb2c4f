package api

import (
	"context"
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
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/api/apiauth"
	"github.com/pdfexport/pdfexport/internal/delivery/callback"
	"github.com/pdfexport/pdfexport/internal/delivery/manuals"
	"github.com/pdfexport/pdfexport/internal/gotenberg"
	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/platform/redisconn"
	"github.com/pdfexport/pdfexport/internal/render/egress"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// Config configures the API.
type Config struct {
	Client *exportclient.Client // required
	// Auth authenticates callers (API_TOKEN and API_CLIENTS_FILE); nil:
	// Token alone.
	Auth *apiauth.Authenticator
	// Token, when set and Auth is nil, is the bearer token every route but
	// /healthz wants (the API_TOKEN client).
	Token string
	// MaxWaiters bounds the ?wait= long-polls waiting at once
	// (API_MAX_WAITERS); 0: DefaultMaxWaiters.
	MaxWaiters int
	// Store is the artifact storage (STORAGE_URL) GET /v1/exports/{id}/pdf
	// reads; nil answers that route 501.
	Store Artifacts
	// Manuals is the registry of MANUALS_FILE, the manuals reader links
	// (GET /v1/manuals/{manual_id}/{version}.pdf) may ask for; nil: none.
	Manuals *manuals.Watcher
	// LinkKeys verify signed links (LINK_SECRET); none: only public
	// manuals and API tokens open links.
	LinkKeys [][]byte
	// LinkWait bounds how long a link waits for a render (LINK_WAIT); 0:
	// DefaultLinkWait.
	LinkWait time.Duration
	// PublicURL is API_PUBLIC_URL: the result of an export answered from
	// storage carries download_url = <it>/v1/exports/{id}/pdf.
	PublicURL string
	// Webhooks delivers the Gotenberg routes' asynchronous conversions
	// (CALLBACK_ALLOWED_HOSTS); nil refuses their webhook headers.
	Webhooks gotenberg.Webhooks
	// Downloads fetches the Gotenberg routes' downloadFrom files (hosts
	// of ALLOWED_HOSTS only); nil refuses the field.
	Downloads *http.Client
	// Background ends the asynchronous conversions still running (bin/api's
	// shutdown); nil: they run to their own end.
	Background context.Context
	// GotenbergRoot is the root path of Gotenberg's routes
	// (GOTENBERG_ROOT_PATH; "": "/").
	GotenbergRoot string
	// HookTasks and Spool make the Gotenberg routes' webhooks durable
	// (gotenberg.Config's); nil: they live in the process.
	HookTasks gotenberg.HookTasks
	Spool     gotenberg.Spool
	// Pending counts the exports waiting in the default queue (Gotenberg's
	// queue-size metric); nil: 0.
	Pending func() float64
	// Logger; nil: slog.Default().
	Logger *slog.Logger
}

// api is an http.Handler with no global state.
type api struct {
	client  *exportclient.Client
	auth    *apiauth.Authenticator
	store   Artifacts
	manuals *manuals.Watcher
	// linkKeys verify reader links; linkWait bounds their wait.
	linkKeys  [][]byte
	linkWait  time.Duration
	linkReqs  linkReqs
	publicURL string
	// gotenberg are the paths of Gotenberg's routes (internal/gotenberg).
	gotenberg gotenberg.Paths
	// hooks delivers the Gotenberg routes' webhook tasks (nil without
	// Gotenberg's routes).
	hooks   asynq.Handler
	log     *slog.Logger
	mux     *http.ServeMux
	waiters chan struct{} // one token per long-poll waiting
	// refusedWaits counts the long-polls refused since the last warning,
	// which is logged at most every waitWarnEvery.
	refusedWaits atomic.Int64
	lastWarn     atomic.Int64 // unix nanoseconds
}

// DefaultMaxWaiters is API_MAX_WAITERS' default. A waiting long-poll holds
// a goroutine, a connection and one Redis read a second (plus its share of
// the one subscription per process), so the cap bounds both the Redis load
// and the heap the waiters cost (docs/HTTP-API.md has the measured cost of
// the default), while a flood of ?wait= past it answers 429 at once
// instead of growing both without bound.
const DefaultMaxWaiters = 1000

// waitRetryAfter is the Retry-After of a long-poll refused for the cap:
// a waiter holds its place at most MaxWait, most far less.
const waitRetryAfter = 2 * time.Second

const waitWarnEvery = 10 * time.Second

// New returns the API's handler.
func New(cfg Config) http.Handler {
	a := newAPI(cfg)
	return traced(a, a.mux)
}

func newAPI(cfg Config) *api {
	a := v1API(cfg)
	a.gotenberg = gotenberg.PathsAt(cfg.GotenbergRoot)
	if a.store != nil {
		// Gotenberg's routes (internal/gotenberg), for the API servers that
		// call Gotenberg through its client libraries.
		gcfg := gotenberg.Config{Queue: a.client, Store: a.store, Stored: a.storedResult, Caller: a.gotenbergCaller,
			Version: buildinfo.String(), Webhooks: cfg.Webhooks, Background: cfg.Background, Logger: a.log,
			Download: cfg.Downloads, RootPath: cfg.GotenbergRoot, Pending: cfg.Pending, HookTasks: cfg.HookTasks, Spool: cfg.Spool}
		g := gotenberg.New(gcfg)
		if cfg.Webhooks != nil {
			a.hooks = gotenberg.NewHooks(gcfg)
		}
		for _, m := range a.gotenberg.Mounts() {
			a.mux.Handle(m, g)
		}
	}
	return a
}

// v1API is the API of /v1 and /healthz.
func v1API(cfg Config) *api {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Auth == nil {
		// Without a clients file nothing can fail.
		cfg.Auth, _ = apiauth.New(cfg.Token, "", nil, cfg.Logger)
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = DefaultMaxWaiters
	}
	if cfg.LinkWait <= 0 {
		cfg.LinkWait = DefaultLinkWait
	}
	a := &api{client: cfg.Client, auth: cfg.Auth, store: cfg.Store, log: cfg.Logger, mux: http.NewServeMux(),
		waiters: make(chan struct{}, cfg.MaxWaiters), manuals: cfg.Manuals, linkKeys: cfg.LinkKeys, linkWait: cfg.LinkWait,
		publicURL: strings.TrimSuffix(cfg.PublicURL, "/")}
	a.mux.HandleFunc("POST /v1/exports", a.create)
	a.mux.HandleFunc("GET /v1/exports/{id}", a.get)
	a.mux.HandleFunc("DELETE /v1/exports/{id}", a.cancel)
	a.mux.HandleFunc("GET /v1/exports/{id}/pdf", a.download)
	a.mux.HandleFunc("GET /v1/manuals/{manual_id}/{file}", a.link)
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return a
}

// gotenbergCaller is the queue and owner of a Gotenberg route's exports:
// the caller's, as for POST /v1/exports without ?queue=.
func (a *api) gotenbergCaller(r *http.Request) (queue, owner string) {
	c := caller(r)
	queue = a.client.Queue()
	if !c.MayEnqueue(queue) && len(c.Queues) > 0 {
		queue = c.Queues[0]
	}
	return queue, c.Owner
}

// bearerOf is the token of r's Authorization: a bearer token, or, on
// Gotenberg's routes, the password of Basic authentication (Gotenberg's
// own scheme, which its clients send when given a username and password).
func (a *api) bearerOf(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if got, ok := strings.CutPrefix(h, "Bearer "); ok {
		return got
	}
	if a.gotenberg.Owns(r.URL.Path) {
		if _, pw, ok := r.BasicAuth(); ok {
			return pw
		}
	}
	return "" // a token without the scheme, or another scheme, is no token
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
	// Readers follow links without a token: the link's handler decides
	// (a signature, a public manual, or a token after all).
	if r.URL.Path != "/healthz" && !a.gotenberg.Public(r.URL.Path) && !strings.HasPrefix(r.URL.Path, "/v1/manuals/") {
		c, ok := a.auth.Authenticate(a.bearerOf(r))
		if !ok && a.gotenberg.Owns(r.URL.Path) {
			gotenberg.Unauthorized(w, r)
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pdfexport"`)
			writeJSON(w, http.StatusUnauthorized, apiError{Error: "missing or wrong bearer token"})
			return
		}
		trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("pdfexport.client", c.Name))
		r = r.WithContext(context.WithValue(r.Context(), clientKey{}, c))
	}
	a.mux.ServeHTTP(w, r)
}

type clientKey struct{}

// caller is the client ServeHTTP authenticated.
func caller(r *http.Request) apiauth.Client {
	c, _ := r.Context().Value(clientKey{}).(apiauth.Client)
	return c
}

// notFound is the answer for an unknown export, and for another client's:
// the same words, so that a client cannot tell one from the other.
var notFound = apiError{Error: "no export with this id (unknown, or its retention ended)"}

// foreign answers 404 when st is not the caller's export, and reports
// whether it did.
func (a *api) foreign(w http.ResponseWriter, r *http.Request, st exportclient.Status) bool {
	c := caller(r)
	if c.Owns(st.Client) {
		return false
	}
	a.log.DebugContext(r.Context(), "export of another client", "client", c.Name, "task_id", st.TaskID)
	writeJSON(w, http.StatusNotFound, notFound)
	return true
}

type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// createResponse answers POST /v1/exports: 202 for a queued export, 200
// with State completed and the Result for one answered from storage.
type createResponse struct {
	TaskID      string               `json:"task_id"`
	StatusURL   string               `json:"status_url"`
	ArtifactKey string               `json:"artifact_key"`
	State       exportclient.State   `json:"state,omitempty"`
	Result      *exportclient.Result `json:"result,omitempty"`
}

type statusResponse struct {
	State    exportclient.State     `json:"state"`
	Result   *exportclient.Result   `json:"result"`
	Error    string                 `json:"error,omitempty"`
	Progress *exportclient.Progress `json:"progress,omitempty"`
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
	c := caller(r)
	q := r.URL.Query().Get("queue")
	if q == "" {
		q = a.client.Queue()
		if !c.MayEnqueue(q) {
			q = c.Queues[0] // the client's first queue stands in for the default it may not use
		}
	}
	if !c.MayEnqueue(q) {
		a.log.InfoContext(r.Context(), "enqueue refused: queue not allowed", "client", c.Name, "queue", q)
		writeJSON(w, http.StatusForbidden, apiError{Field: "queue",
			Error: fmt.Sprintf("client %s may not enqueue to queue %q (its queues: %s)", c.Name, q, strings.Join(c.Queues, ", "))})
		return
	}
	if err := a.client.Validate(p); err != nil {
		a.badRequest(w, err)
		return
	}
	if res, ok := a.storedResult(r.Context(), p); ok {
		id := exportclient.NewStoredID()
		if a.publicURL != "" {
			res.DownloadURL = a.publicURL + "/v1/exports/" + id + "/pdf"
		}
		job, err := a.client.CompleteStored(r.Context(), p, res, exportclient.Queue(q), exportclient.ForClient(c.Owner), exportclient.TaskID(id))
		if err == nil {
			a.log.InfoContext(r.Context(), "export answered from storage", "client", c.Name, "queue", job.Queue, "task_id", job.TaskID, "manual_id", p.ManualID, "version", p.Version, "key", job.ArtifactKey)
			w.Header().Set("Location", "/v1/exports/"+job.TaskID)
			writeJSON(w, http.StatusOK, createResponse{TaskID: job.TaskID, StatusURL: "/v1/exports/" + job.TaskID, ArtifactKey: job.ArtifactKey,
				State: exportclient.StateCompleted, Result: &res})
			return
		}
		if errors.Is(err, exportclient.ErrInvalid) { // the queue: no worker serves it
			a.badRequest(w, err)
			return
		}
		// Redis refused the one SET: the queue path says what it can.
		a.log.WarnContext(r.Context(), "recording an export answered from storage failed; enqueueing it", "client", c.Name, "err", err)
	}
	job, err := a.client.EnqueuePayload(r.Context(), p, exportclient.Queue(q), exportclient.ForClient(c.Owner))
	switch {
	case errors.Is(err, exportclient.ErrInvalid):
		a.badRequest(w, err)
		return
	case err != nil:
		a.log.ErrorContext(r.Context(), "enqueue failed", "client", c.Name, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, apiError{Error: "queue unavailable, retry later"})
		return
	}
	a.log.InfoContext(r.Context(), "export enqueued", "client", c.Name, "queue", job.Queue, "task_id", job.TaskID, "manual_id", p.ManualID, "version", p.Version, "key", job.ArtifactKey)
	w.Header().Set("Location", "/v1/exports/"+job.TaskID)
	writeJSON(w, http.StatusAccepted, createResponse{TaskID: job.TaskID, StatusURL: "/v1/exports/" + job.TaskID, ArtifactKey: job.ArtifactKey})
}

func (a *api) badRequest(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: firstField(err)})
}

// firstField is the field the first FieldError in err names: exportclient's,
// which its validation returns, or the worker's.
func firstField(err error) string {
	var fe *exportclient.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return spec.FirstField(err)
}

// MaxWait bounds GET /v1/exports/{id}?wait=.
const MaxWait = 60 * time.Second

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var wait time.Duration
	if raw := r.URL.Query().Get("wait"); raw != "" {
		var err error
		if wait, err = parseWait(raw); err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{Error: err.Error(), Field: "wait"})
			return
		}
	}
	// Whose it is first: another client's export is not waited for.
	st, err := a.client.Status(r.Context(), id)
	if a.failed(w, r, err) || a.foreign(w, r, st) {
		return
	}
	if wait > 0 && !st.Final() {
		select {
		case a.waiters <- struct{}{}:
			defer func() { <-a.waiters }()
		default:
			a.refuseWait(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		st, err = a.client.Wait(ctx, id, time.Second)
		cancel()
		if err != nil && ctx.Err() != nil && r.Context().Err() == nil && st.TaskID != "" {
			err = nil // the wait ended first: answer with the state it had
		}
		if a.failed(w, r, err) {
			return
		}
	}
	writeJSON(w, http.StatusOK, statusResponse{State: st.State, Result: st.Result, Error: st.Error, Progress: st.Progress})
}

// refuseWait answers a long-poll past MaxWaiters: 429, Retry-After. The
// refusals are logged at most every waitWarnEvery, with how many there
// were, so a flood does not flood the log too.
func (a *api) refuseWait(w http.ResponseWriter, r *http.Request) {
	a.refusedWaits.Add(1)
	now := time.Now().UnixNano()
	if last := a.lastWarn.Load(); now-last >= int64(waitWarnEvery) && a.lastWarn.CompareAndSwap(last, now) {
		a.log.WarnContext(r.Context(), "long-polls refused: API_MAX_WAITERS are waiting already",
			"max_waiters", cap(a.waiters), "refused", a.refusedWaits.Swap(0), "client", caller(r).Name)
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(waitRetryAfter/time.Second)))
	writeJSON(w, http.StatusTooManyRequests, apiError{Field: "wait",
		Error: fmt.Sprintf("too many long-polls waiting (%d); retry after %s, or ask without ?wait=", cap(a.waiters), waitRetryAfter)})
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
	st, err := a.client.Status(r.Context(), r.PathValue("id"))
	if a.failed(w, r, err) || a.foreign(w, r, st) {
		return
	}
	st, err = a.client.Cancel(r.Context(), r.PathValue("id"))
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
	a.log.InfoContext(r.Context(), "export cancel requested", "client", caller(r).Name, "task_id", r.PathValue("id"), "state", st.State)
	writeJSON(w, code, statusResponse{State: st.State, Result: st.Result, Error: st.Error})
}

// failed answers err, if any, and reports whether it did.
func (a *api) failed(w http.ResponseWriter, r *http.Request, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, exportclient.ErrNotFound):
		writeJSON(w, http.StatusNotFound, notFound)
	case r.Context().Err() != nil:
		// The client went away; nobody reads an answer.
	default:
		a.log.ErrorContext(r.Context(), "request failed", "client", caller(r).Name, "path", r.URL.Path, "err", err)
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
// serve. It loads API_CLIENTS_FILE and keeps it current, and opens the
// artifact storage (STORAGE_URL) for downloads; an error is a
// *config.Error (exit 2), wraps ErrStorage or ErrListen, or is the
// server's.
func Run(ctx context.Context, cfg config.Config, addr string, client *exportclient.Client, log *slog.Logger) error {
	if err := cfg.CheckAPI(); err != nil {
		return err
	}
	auth, err := apiauth.New(cfg.APIToken, cfg.APIClientsFile, cfg.QueueNames(), log)
	if err != nil {
		return &config.Error{Vars: []config.VarError{{Var: "API_CLIENTS_FILE", Reason: err.Error()}}}
	}
	if n := auth.Clients().Len(); n > 0 {
		log.Info("API clients loaded", "file", cfg.APIClientsFile, "clients", n, "api_token", cfg.APIToken != "")
	}
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); auth.Run(wctx) }()
	defer func() { stopWatch(); <-watched }()

	var registry *manuals.Watcher
	if cfg.ManualsFile != "" {
		registry, err = manuals.Open(cfg.ManualsFile, manuals.Rules{Hosts: spec.Hosts{Sources: cfg.Allowed}, Queues: cfg.QueueNames()}, log)
		if err != nil {
			return &config.Error{Vars: []config.VarError{{Var: "MANUALS_FILE", Reason: err.Error()}}}
		}
		log.Info("manuals loaded", "file", cfg.ManualsFile, "manuals", registry.Current().Len(), "link_secret", cfg.LinkSecret != "")
		reloaded := make(chan struct{})
		go func() { defer close(reloaded); registry.Run(wctx) }()
		defer func() { stopWatch(); <-reloaded }()
	}

	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	storeCfg := cfg.Storage()
	storeCfg.Logger = log
	store, err := storage.Open(sctx, storeCfg)
	cancel()
	if err != nil {
		return fmt.Errorf("%w: opening %s: %w", ErrStorage, redact.URL(cfg.StorageURL), err)
	}
	var linkKeys [][]byte
	if cfg.LinkSecret != "" {
		linkKeys, _ = spec.ParseLinkSecrets(cfg.LinkSecret) // CheckAPI parsed it
	}
	count, stopCount := pending(cfg, client.Queue(), log)
	defer stopCount()
	acfg := Config{Client: client, Auth: auth, MaxWaiters: cfg.APIMaxWaiters, Store: store, Logger: log,
		Manuals: registry, LinkKeys: linkKeys, LinkWait: cfg.LinkWait, PublicURL: cfg.APIPublicURL, Background: ctx,
		GotenbergRoot: cfg.GotenbergRootPath, Pending: count, Spool: store,
		Downloads: gotenberg.NewDownloadClient(egress.Dialer{List: cfg.Allowed})}
	if !cfg.CallbackAllowed.Empty() {
		d := callback.New(callback.Config{Allowed: cfg.CallbackAllowed, Logger: log})
		defer d.Close()
		acfg.Webhooks = d
		opt, err := redisconn.QueueOpt(cfg)
		if err != nil {
			return err
		}
		hookTasks := asynq.NewClient(opt)
		defer hookTasks.Close()
		acfg.HookTasks = hookTasks
		a := newAPI(acfg)
		stop, err := hookServer(opt, a.hooks, log)
		if err != nil {
			return fmt.Errorf("serving the webhook queue: %w", err)
		}
		defer stop()
		return Serve(ctx, addr, traced(a, a.mux), log)
	}
	return Serve(ctx, addr, New(acfg), log)
}
