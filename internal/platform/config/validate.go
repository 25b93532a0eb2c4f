package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/platform/redact"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// validate checks the parsed variables, each concern in its own function,
// and sets the fields derived from them (Allowed, QueueWeights, …). The
// order of the checks is the order of their errors.
func (c *Config) validate() []VarError {
	var p problems
	c.validateRedis(&p)
	c.validateStorage(&p)
	c.validateReach(&p)
	c.validateQueues(&p)
	c.validateLimits(&p)
	c.validateDurations(&p)
	c.validateChoices(&p)
	c.validateAdmin(&p)
	return p
}

// problems collects the errors of one validation.
type problems []VarError

// bad adds an error for the variable name.
func (p *problems) bad(name, format string, args ...any) {
	// A reason may quote a malformed URL: never its password.
	*p = append(*p, VarError{Var: name, Reason: redact.Text(fmt.Sprintf(format, args...))})
}

// validateRedis checks REDIS_URL, LOCK_REDIS_URL and the ways to reach
// them: TLS files, Sentinel, Cluster.
func (c *Config) validateRedis(p *problems) {
	if err := checkRedisURL(c.RedisURL); err != nil {
		p.bad("REDIS_URL", "%v", err)
	}
	if c.LockRedisURL != "" {
		if err := checkRedisURL(c.LockRedisURL); err != nil {
			p.bad("LOCK_REDIS_URL", "%v", err)
		}
	}
	if (c.RedisTLSCertFile == "") != (c.RedisTLSKeyFile == "") {
		p.bad("REDIS_TLS_KEY_FILE", "REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE go together")
	}
	for _, f := range []struct{ name, path string }{{"REDIS_TLS_CA_FILE", c.RedisTLSCAFile}, {"REDIS_TLS_CERT_FILE", c.RedisTLSCertFile}, {"REDIS_TLS_KEY_FILE", c.RedisTLSKeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			p.bad(f.name, "%v", err)
		}
	}
	if (len(c.RedisSentinelAddrs) > 0) != (c.RedisSentinelMaster != "") {
		p.bad("REDIS_SENTINEL_MASTER", "REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER must be set together")
	}
	if len(c.RedisSentinelAddrs) > 0 && len(c.RedisClusterAddrs) > 0 {
		p.bad("REDIS_CLUSTER_ADDRS", "set either REDIS_CLUSTER_ADDRS or REDIS_SENTINEL_ADDRS, not both")
	}
	for _, list := range []struct {
		name  string
		addrs []string
	}{{"REDIS_SENTINEL_ADDRS", c.RedisSentinelAddrs}, {"REDIS_CLUSTER_ADDRS", c.RedisClusterAddrs}} {
		for _, a := range list.addrs {
			if _, _, err := net.SplitHostPort(strings.TrimSpace(a)); err != nil {
				p.bad(list.name, "%q is not host:port", a)
			}
		}
	}
}

// validateStorage checks STORAGE_URL and the S3 endpoint it may name.
func (c *Config) validateStorage(p *problems) {
	if err := checkStorageURL(c.StorageURL); err != nil {
		p.bad("STORAGE_URL", "%v", err)
	}
	if c.S3Endpoint != "" {
		if u, err := url.Parse(c.S3Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.bad("S3_ENDPOINT", "must be an http(s) URL like http://127.0.0.1:7070")
		}
	}
}

// validateReach checks what an export may reach and carry: the hosts a
// render and a callback may reach, the callback's limits, the key that seals
// an export's secrets and the API's public URL. It sets Allowed and
// CallbackAllowed.
func (c *Config) validateReach(p *problems) {
	allowed, err := allowlist.Parse(c.AllowedHosts)
	if err != nil {
		p.bad("ALLOWED_HOSTS", "%v", err)
	}
	c.Allowed = allowed
	callbacks, err := allowlist.Parse(c.CallbackAllowedHosts)
	if err != nil {
		p.bad("CALLBACK_ALLOWED_HOSTS", "%v", err)
	}
	c.CallbackAllowed = callbacks
	if c.CallbackTimeout <= 0 || c.CallbackTimeout > 5*time.Minute {
		p.bad("CALLBACK_TIMEOUT", "must be between 1ms and 5m")
	}
	if c.SecretsKey != "" {
		if _, err := spec.ParseSecretsKey(c.SecretsKey); err != nil {
			p.bad("SECRETS_KEY", "%v", err) // names the entry, never its value
		}
	}
	if c.CallbackMaxRetry < 0 || c.CallbackMaxRetry > 100 {
		p.bad("CALLBACK_MAX_RETRY", "must be between 0 and 100")
	}
	if c.APIPublicURL != "" {
		if u, err := url.Parse(c.APIPublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			p.bad("API_PUBLIC_URL", "must be an http(s) base URL without credentials or query, like https://pdf.internal.example.com")
		}
	}
}

// validateQueues checks QUEUES and the batch lane within them. It sets
// QueueWeights and BatchQueueSet.
func (c *Config) validateQueues(p *problems) {
	weights, err := ParseQueues(c.Queues)
	if err != nil {
		p.bad("QUEUES", "%v", err)
	}
	c.QueueWeights = weights
	for _, q := range strings.Split(c.BatchQueues, ",") {
		if q = strings.TrimSpace(q); q == "" {
			continue
		}
		if _, ok := weights[q]; !ok {
			if err == nil && c.batchQueuesSet { // the default names a queue QUEUES may not have
				p.bad("BATCH_QUEUES", "%q is not one of QUEUES (%s)", q, c.Queues)
			}
			continue
		}
		c.BatchQueueSet = append(c.BatchQueueSet, q)
	}
	if c.BatchNice < 0 || c.BatchNice > 19 {
		p.bad("BATCH_NICE", "must be between 0 and 19")
	}
}

// validateLimits checks the counts and sizes a worker is bounded by.
func (c *Config) validateLimits(p *problems) {
	positive := []struct {
		name string
		v    int
		max  int
	}{
		{"RENDER_CONCURRENCY", c.RenderConcurrency, 64},
		{"RENDER_MAX_PER_BROWSER", c.RenderMaxPerBrowser, 1_000_000},
		{"RENDER_MAX_PAGES", c.RenderMaxPages, 1_000_000},
		{"WORKER_CONCURRENCY", c.WorkerConcurrency, 10_000},
		{"BATCH_CONCURRENCY", c.BatchConcurrency, 10_000},
	}
	for _, n := range positive {
		if n.v < 1 || n.v > n.max {
			p.bad(n.name, "must be between 1 and %d, got %d", n.max, n.v)
		}
	}
	if c.SiteDiscoveryTimeout < time.Second || c.SiteDiscoveryTimeout > time.Hour {
		p.bad("SITE_DISCOVERY_TIMEOUT", "must be between 1s and 1h, got %s", c.SiteDiscoveryTimeout)
	}
	if c.SiteMaxPageBytes < 64<<10 || c.SiteMaxPageBytes > 1<<30 {
		p.bad("SITE_MAX_PAGE_BYTES", "must be between 65536 (64 KiB) and 1073741824 (1 GiB), got %d", c.SiteMaxPageBytes)
	}
	if c.RenderMaxBytes < 1<<20 || c.RenderMaxBytes > 1<<40 {
		p.bad("RENDER_MAX_BYTES", "must be between 1048576 (1 MiB) and 1099511627776 (1 TiB), got %d", c.RenderMaxBytes)
	}
	if c.MaxRetry < 0 || c.MaxRetry > 100 {
		p.bad("MAX_RETRY", "must be between 0 and 100, got %d", c.MaxRetry)
	}
}

// validateDurations checks the timeouts, TTLs and intervals, each within
// its range, and that a render fits within its task.
func (c *Config) validateDurations(p *problems) {
	durations := []struct {
		name     string
		v        time.Duration
		min, max time.Duration
	}{
		{"RENDER_TIMEOUT", c.RenderTimeout, time.Second, time.Hour},
		{"TASK_TIMEOUT", c.TaskTimeout, time.Second, 24 * time.Hour},
		{"TASK_CHECK_INTERVAL", c.TaskCheckInterval, 10 * time.Millisecond, time.Minute},
		{"RESULT_RETENTION", c.ResultRetention, time.Minute, 90 * 24 * time.Hour},
		{"SOURCE_TTL", c.SourceTTL, time.Hour, 90 * 24 * time.Hour},
		{"LOCK_TTL", c.LockTTL, 100 * time.Millisecond, time.Hour},
		{"LOCK_WAIT_TIMEOUT", c.LockWaitTimeout, 100 * time.Millisecond, 24 * time.Hour},
		{"LOCK_GRACE", c.LockGrace, time.Second, 7 * 24 * time.Hour},
		{"SHUTDOWN_TIMEOUT", c.ShutdownTimeout, 0, time.Hour},
		{"S3_PRESIGN_TTL", c.S3PresignTTL, time.Minute, 7 * 24 * time.Hour},
	}
	for _, d := range durations {
		if d.v < d.min || d.v > d.max {
			p.bad(d.name, "must be between %s and %s, got %s", d.min, d.max, d.v)
		}
	}
	if c.RenderTimeout > c.TaskTimeout && c.TaskTimeout > 0 {
		p.bad("RENDER_TIMEOUT", "must not exceed TASK_TIMEOUT (%s)", c.TaskTimeout)
	}
}

// validateChoices checks the variables that name one of a few values.
func (c *Config) validateChoices(p *problems) {
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		p.bad("LOG_LEVEL", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	switch c.OlderWorkers {
	case "refuse", "wait", "allow":
	default:
		p.bad("OLDER_WORKERS", "must be refuse, wait or allow, got %q", c.OlderWorkers)
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		p.bad("LOG_FORMAT", "must be json or text, got %q", c.LogFormat)
	}
}

// validateAdmin checks the admin listener and the dashboard's credentials on it.
func (c *Config) validateAdmin(p *problems) {
	if c.Dashboard && c.DashboardUser == "" && c.AdminAddr != "" && !isLoopbackAddr(c.AdminAddr) {
		p.bad("DASHBOARD_USER", "required with DASHBOARD=true on ADMIN_ADDR=%s, which is not a loopback address: the dashboard retries, deletes and pauses tasks (set DASHBOARD_USER and DASHBOARD_PASSWORD, or bind ADMIN_ADDR to 127.0.0.1)", c.AdminAddr)
	}
	if (c.DashboardUser == "") != (c.DashboardPassword == "") {
		p.bad("DASHBOARD_PASSWORD", "DASHBOARD_USER and DASHBOARD_PASSWORD must be set together")
	}
	if c.AdminAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
			p.bad("ADMIN_ADDR", "must be host:port, e.g. 127.0.0.1:9090")
		}
	}
}
