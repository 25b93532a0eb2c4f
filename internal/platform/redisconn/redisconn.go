// Package redisconn turns the Redis settings of config (single node, Sentinel
// or Cluster; a separate lock Redis) into asynq connection options and
// go-redis clients with bounded timeouts, so an unreachable Redis shows up as
// a prompt error rather than a hang.
package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/platform/redact"
)

// Timeouts applied to every connection.
const (
	DialTimeout  = 2 * time.Second
	ReadTimeout  = 3 * time.Second
	WriteTimeout = 3 * time.Second
)

// QueueOpt returns the asynq connection of the queue Redis, with the
// credentials and TLS settings of c on every topology.
func QueueOpt(c config.Config) (asynq.RedisConnOpt, error) {
	tlsConfig, err := TLSConfig(c, c.RedisTLS)
	if err != nil {
		return nil, err
	}
	switch {
	case len(c.RedisClusterAddrs) > 0:
		return asynq.RedisClusterClientOpt{Addrs: trim(c.RedisClusterAddrs), Username: c.RedisUsername, Password: c.RedisPassword,
			TLSConfig: tlsConfig, DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}, nil
	case len(c.RedisSentinelAddrs) > 0:
		return asynq.RedisFailoverClientOpt{MasterName: c.RedisSentinelMaster, SentinelAddrs: trim(c.RedisSentinelAddrs),
			SentinelPassword: c.RedisSentinelPass, Username: c.RedisUsername, Password: c.RedisPassword, TLSConfig: tlsConfig,
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}, nil
	}
	o, err := urlOptions(c, c.RedisURL, "REDIS_URL")
	if err != nil {
		return nil, err
	}
	return asynq.RedisClientOpt{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
		DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}, nil
}

// LockClient returns the go-redis client the render locks use: LOCK_REDIS_URL
// when set, otherwise the same deployment as the queue, with the same
// credentials and TLS settings.
func LockClient(c config.Config) (redis.UniversalClient, error) {
	if c.LockRedisURL != "" {
		return single(c, c.LockRedisURL, "LOCK_REDIS_URL")
	}
	tlsConfig, err := TLSConfig(c, c.RedisTLS)
	if err != nil {
		return nil, err
	}
	switch {
	case len(c.RedisClusterAddrs) > 0:
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: trim(c.RedisClusterAddrs), Username: c.RedisUsername,
			Password: c.RedisPassword, TLSConfig: tlsConfig,
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}), nil
	case len(c.RedisSentinelAddrs) > 0:
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: c.RedisSentinelMaster, SentinelAddrs: trim(c.RedisSentinelAddrs),
			SentinelPassword: c.RedisSentinelPass, Username: c.RedisUsername, Password: c.RedisPassword, TLSConfig: tlsConfig,
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}), nil
	}
	return single(c, c.RedisURL, "REDIS_URL")
}

// urlOptions parses a redis:// or rediss:// URL: REDIS_USERNAME and
// REDIS_PASSWORD override its credentials, and a rediss:// URL (or
// REDIS_TLS) gets the TLS settings of c.
func urlOptions(c config.Config, raw, name string) (*redis.Options, error) {
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", name, redact.Text(err.Error()))
	}
	if c.RedisUsername != "" {
		o.Username = c.RedisUsername
	}
	if c.RedisPassword != "" {
		o.Password = c.RedisPassword
	}
	if o.TLSConfig != nil || c.RedisTLS {
		t, err := TLSConfig(c, true)
		if err != nil {
			return nil, err
		}
		if o.TLSConfig != nil {
			t.ServerName = o.TLSConfig.ServerName
		}
		o.TLSConfig = t
	}
	return o, nil
}

func single(c config.Config, raw, name string) (redis.UniversalClient, error) {
	o, err := urlOptions(c, raw, name)
	if err != nil {
		return nil, err
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = DialTimeout, ReadTimeout, WriteTimeout
	o.MaxRetries = 1
	return redis.NewClient(o), nil
}

// TLSConfig is the client TLS of c when on is true (nil otherwise): TLS 1.2
// at least, the CA of REDIS_TLS_CA_FILE (else the system's roots) and the
// client certificate of REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE.
func TLSConfig(c config.Config, on bool) (*tls.Config, error) {
	if !on {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.RedisTLSCAFile != "" {
		pem, err := os.ReadFile(c.RedisTLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("REDIS_TLS_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("REDIS_TLS_CA_FILE %s: no PEM certificate in it", c.RedisTLSCAFile)
		}
		t.RootCAs = pool
	}
	if c.RedisTLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.RedisTLSCertFile, c.RedisTLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("REDIS_TLS_CERT_FILE/REDIS_TLS_KEY_FILE: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

func trim(addrs []string) []string {
	out := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// ExportClient returns the exportclient of the CLI and the HTTP API: the
// queue Redis of c and the worker's allowlist, retry count, task deadline,
// result retention and SECRETS_KEY, so that what they enqueue is what the
// worker expects.
func ExportClient(c config.Config) (*exportclient.Client, error) {
	opt, err := QueueOpt(c)
	if err != nil {
		return nil, err
	}
	maxRetry := c.MaxRetry
	if maxRetry == 0 {
		maxRetry = -1 // exportclient reads 0 as its default; MAX_RETRY=0 means none
	}
	queues := make([]string, 0, len(c.QueueWeights))
	for q := range c.QueueWeights {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	queue := "default" // unless QUEUES has none of that name: then its heaviest
	if _, ok := c.QueueWeights[queue]; !ok && len(queues) > 0 {
		queue = slices.MaxFunc(queues, func(a, b string) int { return c.QueueWeights[a] - c.QueueWeights[b] })
	}
	return exportclient.New(exportclient.Config{Redis: opt, AllowedHosts: c.AllowedHosts, CallbackAllowedHosts: c.CallbackAllowedHosts,
		CallbackMaxRetry: c.CallbackMaxRetry, MaxRetry: maxRetry,
		Timeout: c.TaskTimeout, Retention: c.ResultRetention, Queues: queues, Queue: queue, SourceTTL: c.SourceTTL,
		SecretsKey: c.SecretsKey, OlderWorkers: exportclient.OlderWorkers(c.OlderWorkers)})
}

// Describe names the Redis deployment of c for messages: hosts and master
// name, TLS or not, never a credential.
func Describe(c config.Config) string {
	tlsNote := ""
	if c.RedisTLS {
		tlsNote = " (TLS)"
	}
	switch {
	case len(c.RedisClusterAddrs) > 0:
		return "cluster " + strings.Join(trim(c.RedisClusterAddrs), ",") + tlsNote
	case len(c.RedisSentinelAddrs) > 0:
		return "master " + c.RedisSentinelMaster + " via Sentinels " + strings.Join(trim(c.RedisSentinelAddrs), ",") + tlsNote
	}
	return describeURL(c.RedisURL)
}

func describeURL(raw string) string {
	o, err := redis.ParseURL(raw)
	if err != nil {
		return redact.URL(raw)
	}
	if o.TLSConfig != nil {
		return o.Addr + " (TLS)"
	}
	return o.Addr
}

// DescribeLock names the lock Redis of c.
func DescribeLock(c config.Config) string {
	if c.LockRedisURL != "" {
		return describeURL(c.LockRedisURL)
	}
	return Describe(c)
}

// Ping checks that rdb answers PING, bounded by DialTimeout+ReadTimeout.
func Ping(ctx context.Context, rdb redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, DialTimeout+ReadTimeout)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// IsRefusal reports whether err is Redis or its TLS layer refusing us —
// a wrong password or user (WRONGPASS, NOAUTH, NOPERM) or a certificate
// that does not verify — rather than the server being unreachable: a
// configuration error that retrying will not cure.
func IsRefusal(err error) bool {
	if err == nil {
		return false
	}
	var verify *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	if errors.As(err, &verify) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "invalid password", "tls: ", "x509: "} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
