package testsupport

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// Sentinel is a high-availability Redis deployment of the tests: a master,
// one replica and three Sentinels monitoring MasterName, all with passwords
// (Password on the data nodes, SentinelPassword on the Sentinels).
type Sentinel struct {
	MasterName       string
	Password         string
	SentinelPassword string
	Master, Replica  *harness.Redis
	Sentinels        []*harness.Redis
}

// Sentinel test settings: a master is declared down after downAfter; a
// failover must finish within failoverTimeout.
const (
	sentinelDownAfter       = time.Second
	sentinelFailoverTimeout = 5 * time.Second
)

// StartRedisSentinel starts the deployment and waits until every Sentinel
// knows the replica and the other Sentinels. Everything stops at test end.
func StartRedisSentinel(t testing.TB) *Sentinel {
	t.Helper()
	SkipShort(t, "redis-server (Sentinel)")
	s := &Sentinel{MasterName: "pdfexport", Password: "DATA-PW-3c7", SentinelPassword: "SENTINEL-PW-a41"}
	ctx := context.Background()
	base := t.TempDir()
	// No 5 s wait before a full sync (the default delay batches replicas).
	auth := []string{"--requirepass", s.Password, "--masterauth", s.Password, "--repl-diskless-sync-delay", "0"}
	var err error
	if s.Master, err = harness.StartRedis(ctx, filepath.Join(base, "master"), 0, auth...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Master.Stop)
	if s.Replica, err = harness.StartRedis(ctx, filepath.Join(base, "replica"), 0,
		append(auth, "--replicaof", "127.0.0.1", strconv.Itoa(s.Master.Port))...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Replica.Stop)
	conf := []string{
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2", s.MasterName, s.Master.Port),
		fmt.Sprintf("sentinel auth-pass %s %s", s.MasterName, s.Password),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", s.MasterName, sentinelDownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", s.MasterName, sentinelFailoverTimeout.Milliseconds()),
		"requirepass " + s.SentinelPassword,
		"sentinel sentinel-pass " + s.SentinelPassword,
	}
	for i := range 3 {
		sn, err := harness.StartSentinel(ctx, filepath.Join(base, "sentinel-"+strconv.Itoa(i)), 0, conf)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sn.Stop)
		s.Sentinels = append(s.Sentinels, sn)
	}
	deadline := time.Now().Add(30 * time.Second)
	rc := redis.NewClient(&redis.Options{Addr: s.Replica.Addr(), Password: s.Password})
	for {
		info, _ := rc.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			rc.Close()
			t.Fatalf("the replica did not sync with the master within 30 s:\n%s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rc.Close()
	for _, sn := range s.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr(), Password: s.SentinelPassword})
		for {
			replicas, _ := c.Replicas(ctx, s.MasterName).Result()
			peers, _ := c.Sentinels(ctx, s.MasterName).Result()
			if len(replicas) >= 1 && len(peers) >= 2 {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("sentinel %s: %d replicas, %d peers after 30 s", sn.Addr(), len(replicas), len(peers))
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
	return s
}

// Addrs are the Sentinels' host:port.
func (s *Sentinel) Addrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		out[i] = sn.Addr()
	}
	return out
}

// MasterAddr asks a Sentinel which address it gives for the master now.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	var last error
	for _, sn := range s.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr(), Password: s.SentinelPassword})
		addr, err := c.GetMasterAddrByName(ctx, s.MasterName).Result()
		c.Close()
		if err == nil && len(addr) == 2 {
			return addr[0] + ":" + addr[1], nil
		}
		last = err
	}
	return "", fmt.Errorf("no sentinel names the master: %v", last)
}
