// Package exportclient is the Go API for services that request PDF exports:
// it validates a request with exactly the worker's rules, enqueues it as a
// pdf:export task on the asynq Redis, and reads its status and result.
//
// It depends on asynq and go-redis only; it never pulls in Chromium or the
// AWS SDK. An export is identified by the asynq task id Enqueue returns.
package exportclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/queue/doorbell"
	"github.com/pdfexport/pdfexport/internal/queue/fleet"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage/sidestore"
	"github.com/pdfexport/pdfexport/internal/tasks"
	"github.com/pdfexport/pdfexport/internal/tasks/outcome"
)

// DefaultQueues are the queues a worker serves by default (its QUEUES).
var DefaultQueues = spec.DefaultQueues()

// TaskType is the asynq task type the worker handles.
const TaskType = tasks.TypeExport

// Errors callers branch on.
var (
	// ErrInvalid matches every validation error (errors.Is); errors.As with
	// *FieldError gives the field and the rule.
	ErrInvalid = spec.ErrInvalid
	// ErrNotFound: no task with that id (never existed, or its retention ended).
	ErrNotFound = errors.New("exportclient: export not found")
	// ErrUnavailable: Redis could not be reached or refused the operation.
	ErrUnavailable = errors.New("exportclient: queue unavailable")
)

// Request asks for one manual version as PDF. Exactly one of URL, HTML and
// Chapters is set.
type Request struct {
	ManualID string
	Version  string
	URL      string // http(s), host on ALLOWED_HOSTS
	HTML     string // an inline document, at most 2 MiB
	// Chapters make one PDF of many pages, in order (at most
	// MaxChapters): each chapter is printed on its own, by whichever
	// worker takes it, and stored so that the next version of the manual,
	// or another manual, reuses it while its Revision stays the same.
	Chapters []Chapter
	// Site makes one PDF of the pages a docs site's navigation lists, read
	// by the worker, each chapter reused while its content is unchanged.
	Site      *Site
	Options   Options
	Force     bool   // re-render even if the artifact is stored
	RequestID string // optional caller correlation id, logged by the worker
	// CallbackURL, when set, is POSTed the outcome once the export is final
	// (host on CALLBACK_ALLOWED_HOSTS; verify it with VerifyCallback).
	CallbackURL string
	// Headers and Cookies render URL as one of your users: every request to
	// URL's exact host and port gets them, no other request does. They are
	// secrets: stored beside the task until it is final (never in it),
	// never logged, and part of the artifact's identity through a keyed
	// hash, so one user's render is never reused for another.
	Headers map[string]string
	Cookies []Cookie
}

// Payload converts the request to the raw request.
func (r Request) Payload() Payload {
	p := Payload{V: PayloadVersion, ManualID: r.ManualID, Version: r.Version,
		Source:  PayloadSource{URL: r.URL, HTML: r.HTML, Chapters: r.Chapters, Site: r.Site, Credentials: Credentials{Headers: r.Headers, Cookies: r.Cookies}},
		Options: r.Options, Force: r.Force, RequestID: r.RequestID}
	if r.CallbackURL != "" {
		p.Callback = &Callback{URL: r.CallbackURL}
	}
	return p
}

// DecodePayload parses a JSON request strictly: unknown fields are refused,
// and so are the fields only an enqueuer writes (errors.Is ErrEnvelopeOnly),
// each with a *FieldError naming the field.
func DecodePayload(b []byte) (Payload, error) {
	r, err := spec.DecodeRequest(b)
	if err != nil {
		return Payload{}, publicErr(err)
	}
	return publicPayload(r), nil
}

// ArtifactKey is the key of the artifact p names (relative to the storage
// prefix), the worker's own derivation, when p has no per-export
// credentials or passwords; with them the key depends on their keyed
// identity, which only the enqueuer computes, so this key is one no other
// request shares.
func (p Payload) ArtifactKey() string { return p.spec().ArtifactKey() }

// ErrEnvelopeOnly matches the error of a raw request naming a field only an
// enqueuer writes (source.credentials_ref, source.html_ref, traceparent,
// tracestate, encryption_ref, client); it also matches ErrInvalid.
var ErrEnvelopeOnly = spec.ErrEnvelopeOnly

// Config configures a Client. Zero values take the defaults shown.
type Config struct {
	Redis        asynq.RedisConnOpt // required
	AllowedHosts string             // the worker's ALLOWED_HOSTS; URLs elsewhere are rejected before enqueue
	// CallbackAllowedHosts is the worker's CALLBACK_ALLOWED_HOSTS; a callback
	// elsewhere is rejected before enqueue. Empty: callbacks are refused.
	CallbackAllowedHosts string
	Queue                string // default "default"
	// Queues are the queues the workers serve (their QUEUES); a task on any
	// other would never be picked up, so Enqueue refuses it. Default: the
	// worker's default, critical, default and batch.
	Queues []string
	// HTMLByReference is the size from which an inline HTML document is
	// stored beside the task (compressed, shared by identical documents,
	// deleted when its last export is final) instead of inside it, where it
	// would stay for Retention. 0: 32 KiB; negative: never.
	HTMLByReference int
	// SourceTTL bounds how long such a document stays when its exports never
	// finish (deleted tasks). It must exceed the longest queue wait plus all
	// retries. Default 48h.
	SourceTTL time.Duration
	// CallbackMaxRetry is the workers' CALLBACK_MAX_RETRY, for the callback
	// of an export this client cancels before a worker took it. Default 20.
	CallbackMaxRetry int
	MaxRetry         int           // default 5; -1 for none
	Timeout          time.Duration // per-attempt deadline of the task, default 10m
	Retention        time.Duration // how long the result stays readable, default 24h

	// SecretsKey is the workers' SECRETS_KEY (whsec_<base64 key> entries):
	// per-export credentials and an encryption's passwords are sealed with
	// its first key before they are stored beside the task. Empty: they are
	// stored in clear, readable by anyone who reads Redis, its files or its
	// replicas while the export waits and runs.
	SecretsKey string

	// OlderWorkers is what Enqueue does when the export's envelope needs a
	// newer envelope version than a worker serving its queue serves (that
	// worker would refuse it for good; docs/COMPATIBILITY.md). The zero
	// value refuses it (ErrOlderWorkers) before anything is written.
	OlderWorkers OlderWorkers
}

// OlderWorkers is Config.OlderWorkers (OLDER_WORKERS of bin/api and
// bin/enqueue).
type OlderWorkers string

// The policies of Config.OlderWorkers.
const (
	// RefuseOlderWorkers refuses the export with an *OlderWorkersError
	// naming the older workers; nothing is stored or queued.
	RefuseOlderWorkers OlderWorkers = "refuse"
	// WaitForOlderWorkers waits, checking every second, until no older
	// worker serves the queue (an upgrade in progress), as long as the
	// context lets it; then it refuses as RefuseOlderWorkers does.
	WaitForOlderWorkers OlderWorkers = "wait"
	// AllowOlderWorkers enqueues anyway: an older worker that takes the
	// export fails it for good with an error naming the version it needs,
	// and stores nothing.
	AllowOlderWorkers OlderWorkers = "allow"
)

// ErrOlderWorkers matches the error of an export refused because workers
// older than its envelope needs serve its queue (errors.As with
// *OlderWorkersError names them).
var ErrOlderWorkers = errors.New("exportclient: older workers serve the queue")

// OlderWorkersError is the error of an export whose envelope needs envelope
// version Needs while Workers, serving Queue, serve only older ones.
type OlderWorkersError struct {
	Queue   string
	Needs   int
	Field   string // the envelope field that needs it; "" when the caller asked for the version
	Workers []OlderWorker
}

func (e *OlderWorkersError) Error() string {
	why := ""
	if e.Field != "" {
		why = " (for " + e.Field + ")"
	}
	names := make([]string, len(e.Workers))
	for i, w := range e.Workers {
		names[i] = w.String()
	}
	return fmt.Sprintf("exportclient: the export needs envelope version %d%s, but queue %q is served by older workers: %s; upgrade them first, or set OLDER_WORKERS (Config.OlderWorkers) to wait or allow (docs/COMPATIBILITY.md)",
		e.Needs, why, e.Queue, strings.Join(names, ", "))
}

// Is makes the error match ErrOlderWorkers.
func (e *OlderWorkersError) Is(target error) bool { return target == ErrOlderWorkers }

// ErrInvalidSecretsKey matches New's error for a Config.SecretsKey that is
// not whsec_<base64 key> entries of 32 bytes or more; it names the entry,
// never the value.
var ErrInvalidSecretsKey = spec.ErrInvalidSecretsKey

// Client enqueues exports and reads their state. Safe for concurrent use.
type Client struct {
	cfg       Config
	hosts     spec.Hosts
	client    *asynq.Client
	inspector *asynq.Inspector
	rdb       redis.UniversalClient // Wait's light polls, cancel markers
	finals    *outcome.Listener     // Wait wakes on announced outcomes
	finisher  *outcome.Finisher     // ends the exports Cancel archives
	workers   *fleet.Checker        // the envelope versions a queue's workers serve
	side      *sidestore.Store      // documents and secrets beside their tasks
}

// New returns a Client. Close it when done.
func New(cfg Config) (*Client, error) {
	if cfg.Redis == nil {
		return nil, errors.New("exportclient: Config.Redis is required")
	}
	sources, err := allowlist.Parse(cfg.AllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("exportclient: AllowedHosts: %w", err)
	}
	callbacks, err := allowlist.Parse(cfg.CallbackAllowedHosts)
	if err != nil {
		return nil, fmt.Errorf("exportclient: CallbackAllowedHosts: %w", err)
	}
	if cfg.Queue == "" {
		cfg.Queue = spec.DefaultQueue
	}
	if len(cfg.Queues) == 0 {
		cfg.Queues = DefaultQueues
	}
	if cfg.HTMLByReference == 0 {
		cfg.HTMLByReference = sidestore.HTMLThreshold
	}
	if cfg.SourceTTL <= 0 {
		cfg.SourceTTL = spec.DefaultSourceTTL
	}
	if !slices.Contains(cfg.Queues, cfg.Queue) {
		return nil, fmt.Errorf("exportclient: Config.Queue %q is not one of Config.Queues %v", cfg.Queue, cfg.Queues)
	}
	switch {
	case cfg.MaxRetry == 0:
		cfg.MaxRetry = spec.DefaultMaxRetry
	case cfg.MaxRetry < 0:
		cfg.MaxRetry = 0
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = spec.DefaultTaskTimeout
	}
	if cfg.Retention <= 0 {
		cfg.Retention = spec.DefaultResultRetention
	}
	switch cfg.OlderWorkers {
	case "":
		cfg.OlderWorkers = RefuseOlderWorkers
	case RefuseOlderWorkers, WaitForOlderWorkers, AllowOlderWorkers:
	default:
		return nil, fmt.Errorf("exportclient: Config.OlderWorkers %q is not refuse, wait or allow", cfg.OlderWorkers)
	}
	keys, err := sidestore.ParseKeys(cfg.SecretsKey)
	if err != nil {
		return nil, fmt.Errorf("exportclient: SecretsKey: %w", err) // names the entry, never its value
	}
	rdb, ok := cfg.Redis.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		return nil, fmt.Errorf("exportclient: Config.Redis (%T) does not make a go-redis client", cfg.Redis)
	}
	if cfg.CallbackMaxRetry == 0 {
		cfg.CallbackMaxRetry = spec.DefaultCallbackMaxRetry
	}
	// One connection pool for enqueue, status, polls and markers: a CLI
	// process dials once, not three times.
	client := asynq.NewClientFromRedisClient(rdb)
	inspector := asynq.NewInspectorFromRedisClient(rdb)
	return &Client{cfg: cfg, hosts: spec.Hosts{Sources: sources, Callbacks: callbacks}, client: client, workers: fleet.NewChecker(rdb, inspector),
		inspector: inspector, rdb: rdb, finals: outcome.NewListener(rdb), side: &sidestore.Store{RDB: rdb, Keys: keys},
		finisher: &outcome.Finisher{RDB: rdb, Client: client, CallbackMaxRetry: cfg.CallbackMaxRetry, Retention: cfg.Retention}}, nil
}

// Close releases the Redis connections.
func (c *Client) Close() error {
	// The asynq client and inspector share rdb: closing it closes them.
	return errors.Join(c.finals.Close(), c.rdb.Close())
}

// Queue is the queue Enqueue puts a task on without the Queue option.
func (c *Client) Queue() string { return c.cfg.Queue }

// Validate checks a request with the worker's rules and this client's allowlists.
func (c *Client) Validate(p Payload) error { return publicErr(p.spec().Validate(c.hosts)) }

// EnqueueOption changes one enqueue.
type EnqueueOption func(*enqueueSettings)

type enqueueSettings struct {
	queue, client, taskID string
	envelope              int
}

// Queue puts the task on a named queue (e.g. critical, default, batch).
func Queue(name string) EnqueueOption { return func(s *enqueueSettings) { s.queue = name } }

// ForClient records the HTTP API client (API_CLIENTS_FILE) the export
// belongs to in its envelope; Status reports it, and
// the API shows the export to that client only. An export enqueued without
// it belongs to nobody in particular: the API shows it to API_TOKEN.
func ForClient(name string) EnqueueOption { return func(s *enqueueSettings) { s.client = name } }

// EnvelopeVersion writes the envelope as version n at least (it is never
// below what its fields need): for a caller that depends on what workers of
// that version do, so that no older worker takes the export
// (Config.OlderWorkers decides what happens while one serves the queue).
// n from 1 to the newest envelope version this release writes
// (docs/COMPATIBILITY.md).
func EnvelopeVersion(n int) EnqueueOption { return func(s *enqueueSettings) { s.envelope = n } }

// settings applies opts over the client's defaults and checks the queue
// and the client name they give.
func (c *Client) settings(opts []EnqueueOption) (enqueueSettings, error) {
	s := enqueueSettings{queue: c.cfg.Queue}
	for _, o := range opts {
		o(&s)
	}
	if !slices.Contains(c.cfg.Queues, s.queue) {
		return s, &FieldError{Field: "queue", Rule: fmt.Sprintf("%q is not a queue the workers serve (%s)", s.queue, strings.Join(c.cfg.Queues, ", "))}
	}
	if s.client != "" {
		if err := spec.ValidateClientName(s.client); err != nil {
			return s, publicErr(err)
		}
	}
	return s, nil
}

// TaskID gives the task this id instead of a fresh UUID, so that callers
// asking for the same export at the same moment share one task: asynq
// refuses a second task with an id it holds (queued, running, or final
// during its retention), and EnqueuePayload then answers ErrTaskExists
// with that task's Enqueued. id must not start with StoredPrefix, except
// for CompleteStored, whose ids do (NewStoredID).
func TaskID(id string) EnqueueOption { return func(s *enqueueSettings) { s.taskID = id } }

// ErrTaskExists matches EnqueuePayload's error when the TaskID option names
// a task asynq holds already; the Enqueued returned beside it names that
// task, and nothing was stored or queued.
var ErrTaskExists = errors.New("exportclient: a task with this id exists")

// Enqueued identifies an accepted export.
type Enqueued struct {
	TaskID string
	Queue  string
	// ArtifactKey is relative to the storage prefix. For a Site it is the
	// request's own key, under which nothing is stored: the manual's key
	// follows from the chapters the worker discovers, and its Result has it.
	ArtifactKey string
}

// Enqueue validates r and enqueues it. Validation failures match ErrInvalid;
// Redis failures match ErrUnavailable.
func (c *Client) Enqueue(ctx context.Context, r Request, opts ...EnqueueOption) (Enqueued, error) {
	return c.EnqueuePayload(ctx, r.Payload(), opts...)
}

// EnqueuePayload is Enqueue for a raw request.
//
// It is the enqueuer: it picks the task's id, stores what must not sit in
// the queue beside the task, owned by that id (per-export credentials, an
// encryption's passwords, options.page's headers and cookies; an inline document of HTMLByReference bytes or
// more), and enqueues the
// envelope that names them. The enqueue is a producer span of the global
// tracer provider; its trace context (or, without tracing, the one ctx
// carries) travels in the envelope's traceparent, so the worker's spans
// join the caller's trace.
func (c *Client) EnqueuePayload(ctx context.Context, p Payload, opts ...EnqueueOption) (job Enqueued, err error) {
	if err := c.Validate(p); err != nil {
		return Enqueued{}, err
	}
	s, err := c.settings(opts)
	if err != nil {
		return Enqueued{}, err
	}
	if s.envelope != 0 && (s.envelope < spec.MinEnvelopeVersion || s.envelope > spec.EnvelopeVersion) {
		return Enqueued{}, &FieldError{Field: "envelope_version", Rule: fmt.Sprintf("must be from %d to %d, got %d", spec.MinEnvelopeVersion, spec.EnvelopeVersion, s.envelope)}
	}
	taskID := s.taskID
	if taskID == "" {
		taskID = uuid.NewString()
	} else if isStored(taskID) {
		return Enqueued{}, &FieldError{Field: "task_id", Rule: "must not start with " + StoredPrefix}
	}
	req := p.spec()
	env := req.Envelope()
	env.Client = s.client
	// The envelope's version, checked against the workers of the queue
	// before anything is stored: a refused export leaves nothing behind.
	env.V, err = c.version(ctx, env, s)
	if err != nil {
		return Enqueued{}, err
	}
	// What this call stored beside the task; given back if no task is
	// queued to own it.
	var stored []sidestore.Ref
	defer func() {
		if err != nil {
			_, _ = c.side.Release(context.WithoutCancel(ctx), taskID, stored...)
		}
	}()
	if creds := req.Source.Credentials; !creds.Empty() {
		ref, err := c.side.PutCredentials(ctx, taskID, creds, c.cfg.SourceTTL)
		if err != nil {
			return Enqueued{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		env.Source.Credentials = &ref
		stored = append(stored, sidestore.Ref{Credentials: &ref})
	}
	if enc := req.Options.Encryption; enc != nil {
		ref, err := c.side.PutPasswords(ctx, taskID, enc.Passwords(), c.cfg.SourceTTL)
		if err != nil {
			return Enqueued{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		env.EncryptionRef = &ref
		stored = append(stored, sidestore.Ref{Passwords: &ref})
	}
	if page := req.Options.Page; !page.Secrets().Empty() {
		ref, err := c.side.PutPageSecrets(ctx, taskID, page.Secrets(), c.cfg.SourceTTL)
		if err != nil {
			return Enqueued{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		env.Options.Page = page.WithoutSecrets()
		env.PageSecretsRef = &ref
		stored = append(stored, sidestore.Ref{PageSecrets: &ref})
	}
	key := env.ArtifactKey()
	ctx, span := startEnqueue(ctx, &env, s.queue, key)
	defer func() { endEnqueue(span, job, err) }()
	if c.cfg.HTMLByReference > 0 && len(env.Source.HTML) >= c.cfg.HTMLByReference {
		ref, err := c.side.PutHTML(ctx, taskID, env.Source.HTML, c.cfg.SourceTTL)
		if err != nil {
			return Enqueued{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		env.Source = spec.EnvelopeSource{HTMLRef: &ref}
		stored = append(stored, sidestore.Ref{HTML: &ref})
	}
	// Again with the references: should they need a newer version, what
	// was stored is given back.
	if n, _ := env.NeededVersion(); n > env.V {
		if env.V, err = c.version(ctx, env, s); err != nil {
			return Enqueued{}, err
		}
	}
	body, err := env.Encode()
	if err != nil {
		return Enqueued{}, fmt.Errorf("exportclient: encoding the envelope: %w", err)
	}
	task := tasks.NewExportTask(body)
	info, err := c.client.EnqueueContext(ctx, task, asynq.TaskID(taskID), asynq.Queue(s.queue), asynq.MaxRetry(c.cfg.MaxRetry),
		asynq.Timeout(c.cfg.Timeout), asynq.Retention(c.cfg.Retention))
	if errors.Is(err, asynq.ErrTaskIDConflict) && s.taskID != "" {
		return Enqueued{TaskID: taskID, Queue: s.queue, ArtifactKey: key}, fmt.Errorf("%w: %s", ErrTaskExists, taskID)
	}
	if err != nil {
		return Enqueued{}, fmt.Errorf("%w: enqueue: %w", ErrUnavailable, err)
	}
	// Wake the idle workers of the queue; best-effort (a lost ring costs
	// their TASK_CHECK_INTERVAL).
	_ = doorbell.Ring(ctx, c.rdb, info.Queue)
	c.finals.Prepare() // a Wait is likely to follow: subscribe meanwhile
	return Enqueued{TaskID: info.ID, Queue: info.Queue, ArtifactKey: key}, nil
}

// version is the envelope version env needs (at least the one s asks for
// and env.V), once the workers serving s's queue can serve it, as
// Config.OlderWorkers says. Envelopes of version 1, which every worker
// serves, cost no Redis command.
func (c *Client) version(ctx context.Context, env spec.Envelope, s enqueueSettings) (int, error) {
	need, field := env.NeededVersion()
	if s.envelope > need {
		need, field = s.envelope, ""
	}
	if env.V > need {
		need, field = env.V, ""
	}
	if need <= spec.MinEnvelopeVersion || c.cfg.OlderWorkers == AllowOlderWorkers {
		return need, nil
	}
	for {
		older, err := c.workers.Older(ctx, s.queue, need)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if len(older) == 0 {
			return need, nil
		}
		refused := &OlderWorkersError{Queue: s.queue, Needs: need, Field: field, Workers: publicOlderWorkers(older)}
		if c.cfg.OlderWorkers != WaitForOlderWorkers {
			return 0, refused
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("%w (waited for them until: %w)", refused, context.Cause(ctx))
		case <-time.After(time.Second):
		}
	}
}
