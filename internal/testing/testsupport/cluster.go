package testsupport

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
	"github.com/redis/go-redis/v9"
)

// RedisCluster is a private Redis Cluster of three masters (no replicas) on
// free loopback ports.
type RedisCluster struct {
	Addrs    []string
	password string // --requirepass of the nodes, if any
}

// StartRedisCluster starts three cluster-enabled redis-server processes,
// joins them with `redis-cli --cluster create` and waits for cluster_state:ok.
func StartRedisCluster(t testing.TB) *RedisCluster { return StartRedisClusterWith(t) }

// StartRedisClusterWith is StartRedisCluster with extra arguments for every
// node, such as --requirepass PW --masterauth PW.
func StartRedisClusterWith(t testing.TB, extra ...string) *RedisCluster {
	t.Helper()
	SkipShort(t, "redis-server (a Cluster)")
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli not found: run `make setup` (apt-get install redis-server)")
	}
	c := &RedisCluster{}
	for i, a := range extra {
		if a == "--requirepass" && i+1 < len(extra) {
			c.password = extra[i+1]
		}
	}
	for i := range 3 {
		port := FreePort(t)
		dir := filepath.Join(t.TempDir(), strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		node, err := harness.StartRedis(context.Background(), dir, port, append([]string{
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "2000"}, extra...)...)
		if err != nil {
			t.Fatalf("starting cluster node: %v", err)
		}
		t.Cleanup(node.Stop)
		c.Addrs = append(c.Addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	var args []string
	if c.password != "" {
		args = append(args, "--no-auth-warning", "-a", c.password)
	}
	args = append(append(args, "--cluster", "create"), c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, addr := range c.Addrs {
		cl := redis.NewClient(&redis.Options{Addr: addr, Password: c.password})
		for {
			info, _ := cl.ClusterInfo(context.Background()).Result()
			if strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				cl.Close()
				t.Fatalf("cluster node %s not ok within 20s:\n%s", addr, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cl.Close()
	}
	return c
}

// Client returns a cluster client closed at test end.
func (c *RedisCluster) Client(t testing.TB) *redis.ClusterClient {
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs, Password: c.password})
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}
