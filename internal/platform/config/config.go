// Package config reads the worker's and the CLI's settings from the
// environment (docs/CONFIGURATION.md). Every variable has a documented default; Load
// reports every bad variable at once, each named with the reason, so an
// operator fixes a deployment in one pass.
package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	env "github.com/caarlos0/env/v11"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/sourceauth"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/storage"
)

// Config is every setting of pdfexport. The `env` tag is the variable, the
// `envDefault` tag its default (for the settings an enqueuer must share,
// the spec constants Defaults sets instead), `empty:"off"` that an empty
// value turns the feature off rather than taking the default, and the
// `help` tag what it does: --help and docs/CONFIGURATION.md's table
// come from these tags.
type Config struct {
	RedisURL            string   `env:"REDIS_URL" bins:"worker,enqueue,api" envDefault:"redis://127.0.0.1:6379/0" help:"Redis holding the asynq queues: redis://[:password@]host:port/db or rediss:// for TLS."`
	RedisSentinelAddrs  []string `env:"REDIS_SENTINEL_ADDRS" bins:"worker,enqueue,api" envSeparator:"," help:"Comma list of Sentinel host:port; with REDIS_SENTINEL_MASTER selects Sentinel mode."`
	RedisSentinelMaster string   `env:"REDIS_SENTINEL_MASTER" bins:"worker,enqueue,api" help:"Master name monitored by the Sentinels."`
	RedisClusterAddrs   []string `env:"REDIS_CLUSTER_ADDRS" bins:"worker,enqueue,api" envSeparator:"," help:"Comma list of Redis Cluster node host:port; selects Cluster mode."`
	LockRedisURL        string   `env:"LOCK_REDIS_URL" bins:"worker" help:"Redis for render locks if not the queue's (redis:// or rediss://). Default: the queue's Redis."`
	RedisUsername       string   `env:"REDIS_USERNAME" bins:"worker,enqueue,api" help:"ACL user of the Redis data nodes, every topology (overrides a URL's)."`
	RedisPassword       string   `env:"REDIS_PASSWORD" bins:"worker,enqueue,api" help:"Password of the Redis data nodes, every topology (overrides a URL's)."`
	RedisSentinelPass   string   `env:"REDIS_SENTINEL_PASSWORD" bins:"worker,enqueue,api" help:"The Sentinels' own password (requirepass of sentinel.conf), if they have one."`
	RedisTLS            bool     `env:"REDIS_TLS" bins:"worker,enqueue,api" envDefault:"false" help:"TLS to Sentinel and Cluster nodes (single-node URLs say rediss:// instead)."`
	RedisTLSCAFile      string   `env:"REDIS_TLS_CA_FILE" bins:"worker,enqueue,api" help:"PEM file of the CA that signed the Redis servers' certificates (default: the system's roots)."`
	RedisTLSCertFile    string   `env:"REDIS_TLS_CERT_FILE" bins:"worker,enqueue,api" help:"PEM client certificate for Redis TLS (with REDIS_TLS_KEY_FILE), when the servers require one."`
	RedisTLSKeyFile     string   `env:"REDIS_TLS_KEY_FILE" bins:"worker,enqueue,api" help:"PEM private key of REDIS_TLS_CERT_FILE."`

	StorageURL       string        `env:"STORAGE_URL" bins:"worker,enqueue,api" envDefault:"file://./var/artifacts" help:"Where PDFs are stored: file:///abs/dir, file://./rel/dir or s3://bucket/prefix."`
	S3Endpoint       string        `env:"S3_ENDPOINT" bins:"worker,enqueue,api" help:"S3 endpoint URL for S3-compatible servers (empty: AWS)."`
	S3Region         string        `env:"S3_REGION" bins:"worker,enqueue,api" envDefault:"us-east-1" help:"S3 region."`
	S3ForcePathStyle bool          `env:"S3_FORCE_PATH_STYLE" bins:"worker,enqueue,api" envDefault:"false" help:"Path-style S3 addressing (needed by most S3-compatible servers)."`
	S3CreateBucket   bool          `env:"S3_CREATE_BUCKET" bins:"worker,enqueue,api" envDefault:"false" help:"Create the bucket at start if missing (development only)."`
	S3PresignTTL     time.Duration `env:"S3_PRESIGN_TTL" bins:"worker,enqueue,api" envDefault:"24h" help:"Lifetime of presigned download URLs in results."`

	ChromiumPath         string        `env:"CHROMIUM_PATH" bins:"worker" help:"Chromium binary (empty: auto-detect, the headless shell first: chromium-headless-shell, chrome-headless-shell, then /usr/lib/chromium/chromium, chromium, google-chrome)."`
	RenderConcurrency    int           `env:"RENDER_CONCURRENCY" bins:"worker" envDefault:"2" help:"Tabs rendering at once per worker process."`
	RenderTimeout        time.Duration `env:"RENDER_TIMEOUT" bins:"worker" envDefault:"60s" help:"Deadline of one render (load, readiness, print, upload)."`
	RenderMaxPerBrowser  int           `env:"RENDER_MAX_PER_BROWSER" bins:"worker" envDefault:"100" help:"Restart Chromium after this many renders."`
	RenderMaxPages       int           `env:"RENDER_MAX_PAGES" bins:"worker" envDefault:"5000" help:"Most pages of one PDF; a longer one fails for good, nothing stored."`
	RenderMaxBytes       int64         `env:"RENDER_MAX_BYTES" bins:"worker" envDefault:"536870912" help:"Most bytes of one PDF (default 512 MiB); a larger one fails for good, nothing stored."`
	SiteDiscoveryTimeout time.Duration `env:"SITE_DISCOVERY_TIMEOUT" bins:"worker" envDefault:"2m" help:"Deadline of reading a source.site's navigation and its chapters' revisions (docs/EXPORTS.md); a slower site is retried."`
	SiteMaxPageBytes     int64         `env:"SITE_MAX_PAGE_BYTES" bins:"worker" envDefault:"8388608" help:"Most bytes of one page or sitemap a source.site's discovery reads (default 8 MiB); a larger one fails the export for good, naming it."`
	AllowedHosts         string        `env:"ALLOWED_HOSTS" bins:"worker,enqueue,api" help:"Hosts pages may load from: comma list of host, host:port or *.suffix. Loopback, private and other special-purpose addresses only when listed exactly with a port (127.0.0.1:8080; without one the entry is refused). The worker's own endpoints (ADMIN_ADDR, API_ADDR, the Redis servers, S3_ENDPOINT, its egress proxy) are never reachable, whatever the list says."`

	WorkerConcurrency int           `env:"WORKER_CONCURRENCY" bins:"worker" envDefault:"8" help:"asynq handler slots per worker process (waiting tasks hold a slot but no tab)."`
	Queues            string        `env:"QUEUES" bins:"worker,enqueue,api" help:"Queues and their priority weights, e.g. critical=6,default=3,batch=1."`
	BatchQueues       string        `env:"BATCH_QUEUES" bins:"worker" envDefault:"batch" empty:"off" help:"Queues of QUEUES served by the worker's batch lane: their own handler slots (BATCH_CONCURRENCY), their own Chromium (RENDER_CONCURRENCY tabs) at a lower CPU priority (BATCH_NICE), so a catalogue re-render never takes the handler slots, tabs or CPU of interactive exports. Empty: one lane for every queue."`
	BatchConcurrency  int           `env:"BATCH_CONCURRENCY" bins:"worker" envDefault:"3" help:"Handler slots of the batch lane (batch tasks in progress at once per worker process, waiting for another worker's render included)."`
	BatchNice         int           `env:"BATCH_NICE" bins:"worker" envDefault:"10" help:"Nice value (0-19) of the batch lane's Chromium, every thread of it: under contention interactive renders get the CPU first, while batch keeps a share of a fully loaded CPU (smaller the higher the value) and all of an idle one. A worker holding CAP_SYS_NICE (root) starts that Chromium through setpriv(1) without it, since Chromium would raise its own threads' priorities back."`
	TaskCheckInterval time.Duration `env:"TASK_CHECK_INTERVAL" bins:"worker" envDefault:"1s" help:"How often an idle worker polls its queues besides the doorbell (asynq TaskCheckInterval, jittered 0.5–1.5×). With TASK_DOORBELL an enqueue wakes idle workers at once, so this only bounds the pick-up of a task whose ring was lost and of retries and scheduled tasks as they become due; without it, it is the pick-up latency. Each poll is a few Redis commands per queue, so a short interval makes every idle worker a steady load on Redis (BENCHMARKS.md, section 12, measures it)."`
	TaskDoorbell      bool          `env:"TASK_DOORBELL" bins:"worker" envDefault:"true" help:"Idle workers wait on a doorbell (sharded pub/sub pdfexport:doorbell, Redis ≥ 7) that every enqueue through exportclient, bin/api and bin/enqueue rings, and pick up a new export within milliseconds; false: they only poll every TASK_CHECK_INTERVAL."`
	MaxRetry          int           `env:"MAX_RETRY" bins:"enqueue,api" help:"Retries of a failed export before it is archived."`
	TaskTimeout       time.Duration `env:"TASK_TIMEOUT" bins:"worker,enqueue,api" help:"Overall deadline of one export task, waiting for another worker's render included."`
	ResultRetention   time.Duration `env:"RESULT_RETENTION" bins:"worker,enqueue,api" help:"How long finished tasks and their results stay readable (status, --wait, GET /v1/exports/{id})."`
	SourceTTL         time.Duration `env:"SOURCE_TTL" bins:"enqueue,api" help:"How long an inline HTML document of 32 KiB or more, or an export's secrets (source.headers, source.cookies, options.page's headers and cookies, options.encryption's passwords), stored beside its export task, survive when the export never finishes (they are deleted as soon as it is final). Longer than the longest queue wait plus all retries."`
	SourceAuthFile    string        `env:"SOURCE_AUTH_FILE" bins:"worker" help:"JSON file of credentials for private sources: {\"rules\": [{\"hosts\": \"docs.example.com,*.intra.example\", \"headers\": {\"Authorization\": \"env:DOCS_TOKEN\"}, \"cookies\": [{\"name\": \"sid\", \"value\": \"file:/run/secrets/sid\", \"path\": \"/\"}]}]}. hosts are origins: a bare host (or host:port, *.suffix) is https only, port 443 unless given; plain http needs http://host:port. Every request of a render, and of a source.site discovery, to a matching origin gets them, no other request does. Reloaded on SIGHUP and when it (or a file it names) changes. Workers only."`

	LockTTL         time.Duration `env:"LOCK_TTL" bins:"worker" envDefault:"30s" help:"Render lock lease; renewed every third of it while rendering."`
	LockWaitTimeout time.Duration `env:"LOCK_WAIT_TIMEOUT" bins:"worker" envDefault:"5m" help:"Longest a task waits for another worker's render before it is retried."`
	LockGrace       time.Duration `env:"LOCK_GRACE" bins:"worker" envDefault:"10m" help:"How long the outcome of a release is remembered for late arrivals."`
	LockFailOpen    bool          `env:"LOCK_FAIL_OPEN" bins:"worker" envDefault:"true" help:"Render without the lock when Redis is unreachable (a duplicate render beats a failed export)."`

	AdminAddr         string        `env:"ADMIN_ADDR" bins:"worker" envDefault:"127.0.0.1:9090" empty:"off" help:"Admin HTTP listen address (health, readiness, metrics, dashboard); empty disables it."`
	Dashboard         bool          `env:"DASHBOARD" bins:"worker" envDefault:"false" help:"Serve the asynqmon dashboard at /monitoring/ on the admin address."`
	DashboardUser     string        `env:"DASHBOARD_USER" bins:"worker" help:"Basic-auth user for the dashboard (with DASHBOARD_PASSWORD; empty: no authentication, allowed only on a loopback ADMIN_ADDR)."`
	DashboardPassword string        `env:"DASHBOARD_PASSWORD" bins:"worker" help:"Basic-auth password for the dashboard."`
	DashboardReadOnly bool          `env:"DASHBOARD_READONLY" bins:"worker" envDefault:"false" help:"Dashboard in view-only mode (no retry, delete or pause buttons)."`
	LogLevel          string        `env:"LOG_LEVEL" bins:"worker,enqueue,api" envDefault:"info" help:"debug, info, warn or error."`
	LogFormat         string        `env:"LOG_FORMAT" bins:"worker,enqueue,api" envDefault:"json" help:"json or text."`
	ShutdownTimeout   time.Duration `env:"SHUTDOWN_TIMEOUT" bins:"worker" envDefault:"30s" help:"How long a stopping worker lets renders in flight finish."`

	APIAddr      string `env:"API_ADDR" bins:"worker,api" envDefault:"127.0.0.1:8080" help:"Listen address of bin/api, the HTTP enqueue API."`
	APIToken     string `env:"API_TOKEN" bins:"api" help:"Bearer token required by the HTTP enqueue API (bin/api) (empty: no authentication; bind to a private address)."`
	APIPublicURL string `env:"API_PUBLIC_URL" bins:"worker,enqueue,api" help:"Base URL at which API servers reach bin/api, e.g. https://pdf.internal.example.com; set on workers, results and callbacks carry download_url = <it>/v1/exports/{id}/pdf (and bin/api's for exports it answers from storage); enqueue link prints reader links under it."`

	GotenbergRootPath string `env:"GOTENBERG_ROOT_PATH" bins:"api" envDefault:"/" help:"Root path of bin/api's Gotenberg routes, as Gotenberg's API_ROOT_PATH: /foo/ serves /foo/forms/chromium/convert/html, /foo/health, /foo/version, /foo/prometheus/metrics and /foo/ (the /v1 API stays at /). Starts and ends with /."`

	APIClientsFile string        `env:"API_CLIENTS_FILE" bins:"api" help:"YAML or JSON file of the HTTP API's clients, each with its own bearer token and queues: {\"clients\": [{\"name\": \"portal\", \"token\": \"env:PORTAL_TOKEN\", \"queues\": [\"default\"]}]}. A token is env:NAME, file:PATH or a literal of at least 16 characters; queues default to default. An export belongs to the client that enqueued it: another client's GET, DELETE, download or long-poll of it is a 404, and a queue outside the client's set a 403. API_TOKEN stays valid beside them, as one more client with every queue, which sees the exports that record no client (its own, bin/enqueue's, and those from before the file). Reloaded on SIGHUP and when it (or a file it names) changes. bin/api only."`
	APIMaxWaiters  int           `env:"API_MAX_WAITERS" bins:"api" envDefault:"1000" help:"Most GET /v1/exports/{id}?wait= long-polls waiting at once per bin/api process; more answer 429 with Retry-After. Each holds a connection and polls Redis once a second."`
	ManualsFile    string        `env:"MANUALS_FILE" bins:"enqueue,api" help:"YAML or JSON file of the manuals reader download links (GET /v1/manuals/{manual_id}/{version}.pdf on bin/api) may ask for: {\"manuals\": {\"ops-guide\": {\"url\": \"https://docs.example.com/ops-guide/{version}/print\", \"options\": {\"paper\": \"A4\"}, \"allow_query\": [\"paper\", \"landscape\"], \"links\": \"signed\"}}}. A source is url or chapters ({version} and {manual} are substituted), checked against ALLOWED_HOSTS at load; versions: a pattern the versions must match; links: signed (the default: a LINK_SECRET signature or an API token) or public (anyone). Reloaded on SIGHUP and when it changes; an empty file, or \"manuals:\" with nothing under it, is refused (a reload that catches the file half-written keeps the manuals in force), and \"manuals: {}\" is an empty registry. bin/api only."`
	LinkSecret     string        `env:"LINK_SECRET" bins:"enqueue,api" help:"Keys signing reader download links (expires + signature, HMAC-SHA256 over method, path, sorted query and expiry): one or more whsec_<base64 key> entries of at least 32 bytes (whsec_$(openssl rand -base64 32)), space- or comma-separated; the first signs (enqueue link, exportclient.SignLink), every one verifies, so a key rotates: prepend the new one, drop the old once its links expired. Empty: only public manuals and API tokens open links."`
	LinkWait       time.Duration `env:"LINK_WAIT" bins:"api" envDefault:"30s" help:"How long a reader link of a version that is not stored waits for its render (one render however many readers click) before it answers 202 with Retry-After; 1s to 60s."`

	CallbackAllowedHosts string        `env:"CALLBACK_ALLOWED_HOSTS" bins:"worker,enqueue,api" help:"Hosts callback.url may name (same syntax and address rules as ALLOWED_HOSTS); empty refuses callbacks. Set on workers and on every enqueuer."`
	CallbackSecret       string        `env:"CALLBACK_SECRET" bins:"worker" help:"Keys signing callbacks the Standard Webhooks way (webhook-signature): one or more whsec_<base64 key> entries (keys of at least 16 bytes, e.g. whsec_$(openssl rand -base64 32)), space- or comma-separated; every delivery carries one signature per key, so a key rotates without a gap. Required on workers when CALLBACK_ALLOWED_HOSTS is set; a malformed entry stops the worker. Enqueuers do not need it."`
	CallbackTimeout      time.Duration `env:"CALLBACK_TIMEOUT" bins:"worker" envDefault:"10s" help:"Deadline of one callback POST (connect, send, response header)."`
	CallbackMaxRetry     int           `env:"CALLBACK_MAX_RETRY" bins:"worker,enqueue,api" help:"Retries of a callback the receiver did not accept (non-2xx, network error), backing off from 1s to 1h: about 9 hours of attempts."`

	SecretsKey string `env:"SECRETS_KEY" bins:"worker,enqueue,api" help:"Keys sealing the secrets an export stores beside its task in Redis (per-export source.headers and source.cookies, options.page's headers and cookies, options.encryption's passwords) with AES-256-GCM: one or more whsec_<base64 key> entries (keys of at least 32 bytes, e.g. whsec_$(openssl rand -base64 32)), space- or comma-separated; the first seals, every one opens, so a key rotates: prepend the new key on workers, then on enqueuers, and drop the old one once exports sealed with it are final (SOURCE_TTL at most). Set the same list on workers and on every enqueuer (bin/api, bin/enqueue, exportclient's Config.SecretsKey), workers first. Empty: those secrets sit in clear in Redis while the export waits and runs (its memory, RDB/AOF files, replicas, MONITOR), and workers warn at start. Values stored in clear are read either way; a worker that cannot open a sealed value fails that export for good."`

	OlderWorkers string `env:"OLDER_WORKERS" bins:"enqueue,api" envDefault:"refuse" help:"What an enqueuer (bin/api, bin/enqueue) does with an export whose envelope needs a newer envelope version than a worker serving its queue announces (docs/COMPATIBILITY.md; workers of releases before v0.1.0 announce none and serve version 1 only): refuse (the export is refused with an error naming the older workers; nothing is stored or queued), wait (it waits until none serves the queue, checking every second, as long as the request or command lets it), or allow (it is queued; an older worker that takes it fails it for good, naming the version it needs, and stores nothing). Envelopes of version 1, which every worker serves, are never held back."`

	// Parsed forms, filled by Load.
	Allowed         allowlist.List `env:"-"`
	CallbackAllowed allowlist.List `env:"-"`
	QueueWeights    map[string]int `env:"-"`
	// BatchQueueSet are the queues of BATCH_QUEUES (all on QUEUES).
	BatchQueueSet  []string `env:"-"`
	batchQueuesSet bool     // BATCH_QUEUES was given, not defaulted
}

// VarError is one bad variable and why.
type VarError struct {
	Var    string
	Reason string
}

func (e VarError) Error() string { return e.Var + ": " + e.Reason }

// Error lists every bad variable. It is the only error Load returns.
type Error struct {
	Vars []VarError
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Vars))
	for i, v := range e.Vars {
		lines[i] = "  " + v.Error()
	}
	return "invalid configuration:\n" + strings.Join(lines, "\n")
}

// Storage is the artifact storage c names (STORAGE_URL and the S3_*
// variables), derived here once for the worker, the HTTP API and the CLI.
// It leaves S3CreateBucket false, since only a worker creates a missing
// bucket (it sets S3CreateBucket from c itself), and Logger nil (the
// caller's).
func (c Config) Storage() storage.Config {
	return storage.Config{
		URL:              c.StorageURL,
		S3Endpoint:       c.S3Endpoint,
		S3Region:         c.S3Region,
		S3ForcePathStyle: c.S3ForcePathStyle,
		PresignTTL:       c.S3PresignTTL,
	}
}

// CheckWorker adds the rules only a worker needs: it signs callbacks, so
// it must hold CALLBACK_SECRET, well-formed, when callbacks are allowed. The result is an
// *Error (exit 2) or nil.
func (c Config) CheckWorker() error {
	if !c.CallbackAllowed.Empty() && c.CallbackSecret == "" {
		return &Error{Vars: []VarError{{Var: "CALLBACK_SECRET", Reason: "required on a worker when CALLBACK_ALLOWED_HOSTS is set (it signs the callbacks)"}}}
	}
	if c.CallbackSecret != "" {
		if _, err := spec.ParseCallbackSecrets(c.CallbackSecret); err != nil {
			return &Error{Vars: []VarError{{Var: "CALLBACK_SECRET", Reason: err.Error()}}} // names the entry, never its value
		}
	}
	if c.SourceAuthFile != "" {
		if _, err := sourceauth.Load(c.SourceAuthFile); err != nil {
			return &Error{Vars: []VarError{{Var: "SOURCE_AUTH_FILE", Reason: c.SourceAuthFile + ": " + err.Error()}}}
		}
	}
	return nil
}

// defaults holds the settings whose defaults an enqueuer shares with the
// workers (exportclient takes the same spec constants); env.Parse keeps
// them where a variable is unset or empty.
func defaults() Config {
	return Config{
		Queues:           spec.DefaultQueueWeights,
		MaxRetry:         spec.DefaultMaxRetry,
		TaskTimeout:      spec.DefaultTaskTimeout,
		ResultRetention:  spec.DefaultResultRetention,
		SourceTTL:        spec.DefaultSourceTTL,
		CallbackMaxRetry: spec.DefaultCallbackMaxRetry,
	}
}

// Load reads the configuration from environ (os.Environ() form) and
// validates it.
func Load(environ []string) (Config, error) {
	c := defaults()
	vars := &Error{}
	opts := env.Options{Environment: env.ToMap(environ)}
	if err := env.ParseWithOptions(&c, opts); err != nil {
		vars.Vars = append(vars.Vars, parseErrors(err)...)
	}
	emptyMeansOff(&c, opts.Environment)
	_, c.batchQueuesSet = opts.Environment["BATCH_QUEUES"]
	unparsable := map[string]bool{}
	for _, v := range vars.Vars {
		unparsable[v.Var] = true
	}
	for _, v := range c.validate() {
		if !unparsable[v.Var] { // a value that did not parse is reported once, with why
			vars.Vars = append(vars.Vars, v)
		}
	}
	if len(vars.Vars) > 0 {
		sort.SliceStable(vars.Vars, func(i, j int) bool { return vars.Vars[i].Var < vars.Vars[j].Var })
		return c, vars
	}
	return c, nil
}

// emptyMeansOff zeroes the fields tagged empty:"off" whose variable is set
// to the empty string: env.Parse gives an empty variable its default, which
// for these would leave on what the operator turned off.
func emptyMeansOff(c *Config, environment map[string]string) {
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Tag.Get("empty") != "off" {
			continue
		}
		if val, set := environment[envName(f)]; set && val == "" {
			v.Field(i).SetZero()
		}
	}
}

func envName(f reflect.StructField) string { return strings.Split(f.Tag.Get("env"), ",")[0] }

func parseErrors(err error) []VarError {
	names := map[string]string{}
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		f := t.Field(i)
		names[f.Name] = envName(f)
	}
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return []VarError{{Var: "environment", Reason: err.Error()}}
	}
	var out []VarError
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			out = append(out, VarError{Var: names[pe.Name], Reason: describeParse(pe)})
			continue
		}
		out = append(out, VarError{Var: "environment", Reason: e.Error()})
	}
	return out
}

func describeParse(pe env.ParseError) string {
	switch pe.Type.Kind() {
	case reflect.Bool:
		return "must be true or false"
	case reflect.Int:
		return "must be a whole number"
	case reflect.Int64:
		return "must be a duration like 500ms, 30s or 5m"
	}
	return pe.Err.Error()
}

func checkRedisURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return fmt.Errorf("scheme must be redis or rediss, got %q", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("must name a host, e.g. redis://127.0.0.1:6379/0")
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return fmt.Errorf("database %q must be a number", db)
		}
	}
	return nil
}

func checkStorageURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a URL: %v", err)
	}
	if u.User != nil {
		return errors.New("must not carry credentials (use the standard AWS variables)")
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "." && u.Host != "localhost" {
			return fmt.Errorf("file URL must be file:///absolute/dir or file://./relative/dir, got host %q", u.Host)
		}
		if u.Path == "" || u.Path == "/" && u.Host == "" {
			return errors.New("file URL needs a directory")
		}
	case "s3":
		if u.Host == "" {
			return errors.New("s3 URL must be s3://bucket[/prefix]")
		}
	default:
		return fmt.Errorf("scheme must be file or s3, got %q", u.Scheme)
	}
	return nil
}

// isLoopbackAddr reports whether a listen address binds loopback only
// ("localhost", 127.0.0.0/8, ::1); an empty host binds every interface.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// ParseQueues parses "name=weight,…" into asynq queue priorities.
func ParseQueues(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, w, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if !ok || name == "" || err != nil || n < 1 {
			return nil, fmt.Errorf("%q must be name=weight with a weight ≥ 1", item)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("queue %q listed twice", name)
		}
		out[name] = n
	}
	if len(out) == 0 {
		return nil, errors.New("at least one queue is required")
	}
	return out, nil
}

// Variables lists every environment variable with its default and doc, in
// declaration order, for --help and docs/CONFIGURATION.md.
func Variables() []Variable {
	t := reflect.TypeOf(Config{})
	preset := reflect.ValueOf(defaults())
	var out []Variable
	for i := range t.NumField() {
		f := t.Field(i)
		name := envName(f)
		if name == "" || name == "-" {
			continue
		}
		def, tagged := f.Tag.Lookup("envDefault")
		if !tagged && !preset.Field(i).IsZero() {
			def = formatDefault(preset.Field(i).Interface())
		}
		out = append(out, Variable{Name: name, Default: def, Doc: f.Tag.Get("help"), Binaries: binaries(f)})
	}
	return out
}

// Binaries are the programs that read the configuration, the values of a
// variable's bins tag.
var Binaries = []string{"worker", "enqueue", "api"}

// binaries is the bins tag of f: which of Binaries read the variable.
func binaries(f reflect.StructField) []string {
	var out []string
	for b := range strings.SplitSeq(f.Tag.Get("bins"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// WriteVariables writes the variables bin reads as its --help lists them:
// name, default, meaning.
func WriteVariables(w io.Writer, bin string) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, v := range VariablesFor(bin) {
		def := v.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Name, def, v.Doc)
	}
	return tw.Flush()
}

// VariablesFor lists the variables bin reads, for its --help.
func VariablesFor(bin string) []Variable {
	var out []Variable
	for _, v := range Variables() {
		if slices.Contains(v.Binaries, bin) {
			out = append(out, v)
		}
	}
	return out
}

// formatDefault writes a default the way an operator would set it:
// durations as 10m or 48h rather than 10m0s or 48h0m0s.
func formatDefault(v any) string {
	d, ok := v.(time.Duration)
	if !ok {
		return fmt.Sprint(v)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Variable describes one setting.
type Variable struct {
	Name, Default, Doc string
	// Binaries read it (a subset of Binaries, in that order).
	Binaries []string
}
