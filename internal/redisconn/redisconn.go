// Package redisconn turns the Redis settings of config (single node, Sentinel
// or Cluster; a separate lock Redis) into asynq connection options and
// go-redis clients with bounded timeouts, so an unreachable Redis shows up as
// a prompt error rather than a hang.
package redisconn

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/config"
)

// Timeouts applied to every connection.
const (
	DialTimeout  = 2 * time.Second
	ReadTimeout  = 3 * time.Second
	WriteTimeout = 3 * time.Second
)

// QueueOpt returns the asynq connection of the queue Redis.
func QueueOpt(c config.Config) (asynq.RedisConnOpt, error) {
	switch {
	case len(c.RedisClusterAddrs) > 0:
		return asynq.RedisClusterClientOpt{Addrs: trim(c.RedisClusterAddrs),
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}, nil
	case len(c.RedisSentinelAddrs) > 0:
		return asynq.RedisFailoverClientOpt{MasterName: c.RedisSentinelMaster, SentinelAddrs: trim(c.RedisSentinelAddrs),
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}, nil
	}
	o, err := redis.ParseURL(c.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return asynq.RedisClientOpt{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
		DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}, nil
}

// LockClient returns the go-redis client the render locks use: LOCK_REDIS_URL
// when set, otherwise the same deployment as the queue.
func LockClient(c config.Config) (redis.UniversalClient, error) {
	if c.LockRedisURL != "" {
		return single(c.LockRedisURL, "LOCK_REDIS_URL")
	}
	switch {
	case len(c.RedisClusterAddrs) > 0:
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: trim(c.RedisClusterAddrs),
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}), nil
	case len(c.RedisSentinelAddrs) > 0:
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: c.RedisSentinelMaster, SentinelAddrs: trim(c.RedisSentinelAddrs),
			DialTimeout: DialTimeout, ReadTimeout: ReadTimeout, WriteTimeout: WriteTimeout}), nil
	}
	return single(c.RedisURL, "REDIS_URL")
}

func single(raw, name string) (redis.UniversalClient, error) {
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = DialTimeout, ReadTimeout, WriteTimeout
	o.MaxRetries = 1
	if o.TLSConfig != nil && o.TLSConfig.MinVersion == 0 {
		o.TLSConfig.MinVersion = tls.VersionTLS12
	}
	return redis.NewClient(o), nil
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
// queue Redis of c and the worker's allowlist, retry count, task deadline and
// result retention, so that what they enqueue is what the worker expects.
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
	return exportclient.New(exportclient.Config{Redis: opt, AllowedHosts: c.AllowedHosts, MaxRetry: maxRetry,
		Timeout: c.TaskTimeout, Retention: c.ResultRetention, Queues: queues, Queue: queue})
}
