package redisconn

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

const aclUser, aclPassword = testsupport.ACLUser, testsupport.ACLPassword

func load(t *testing.T, env ...string) config.Config {
	t.Helper()
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// pingBoth connects the queue (asynq's client) and the lock client of cfg.
func pingBoth(cfg config.Config) error {
	opt, err := QueueOpt(cfg)
	if err != nil {
		return err
	}
	q := opt.MakeRedisClient().(redis.UniversalClient)
	defer q.Close()
	if err := Ping(context.Background(), q); err != nil {
		return err
	}
	l, err := LockClient(cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	return Ping(context.Background(), l)
}

// TestSingleNode_TLSAndACL: rediss:// with a user and password in the URL,
// or in REDIS_USERNAME/REDIS_PASSWORD, with the CA and client certificate
// files, reaches a TLS-only server for the queues and the locks (also via
// LOCK_REDIS_URL); a wrong password, an unknown CA or no client certificate
// fail, are recognized as refusals, and never show the password.
func TestSingleNode_TLSAndACL(t *testing.T) {
	pki := testsupport.NewTLSFiles(t)
	srv := testsupport.StartRedisTLS(t, pki)
	addr := "127.0.0.1:" + strconv.Itoa(srv.Port)
	files := []string{"REDIS_TLS_CA_FILE=" + pki.CA, "REDIS_TLS_CERT_FILE=" + pki.ClientCert, "REDIS_TLS_KEY_FILE=" + pki.ClientKey}
	for _, tc := range []struct {
		name string
		env  []string
		fail string // "" when it must connect; else a word of the error
	}{
		{"user and password in the URL", append([]string{"REDIS_URL=rediss://" + aclUser + ":" + aclPassword + "@" + addr + "/0"}, files...), ""},
		{"REDIS_USERNAME and REDIS_PASSWORD", append([]string{"REDIS_URL=rediss://" + addr + "/0", "REDIS_USERNAME=" + aclUser, "REDIS_PASSWORD=" + aclPassword}, files...), ""},
		{"LOCK_REDIS_URL", append([]string{"REDIS_URL=rediss://" + aclUser + ":" + aclPassword + "@" + addr + "/0", "LOCK_REDIS_URL=rediss://" + aclUser + ":" + aclPassword + "@" + addr + "/1"}, files...), ""},
		{"wrong password", append([]string{"REDIS_URL=rediss://" + aclUser + ":not-it@" + addr + "/0"}, files...), "WRONGPASS"},
		{"unknown CA", []string{"REDIS_URL=rediss://" + aclUser + ":" + aclPassword + "@" + addr + "/0", "REDIS_TLS_CA_FILE=" + pki.OtherCA, "REDIS_TLS_CERT_FILE=" + pki.ClientCert, "REDIS_TLS_KEY_FILE=" + pki.ClientKey}, "certificate"},
		{"no client certificate", []string{"REDIS_URL=rediss://" + aclUser + ":" + aclPassword + "@" + addr + "/0", "REDIS_TLS_CA_FILE=" + pki.CA}, "tls"},
		{"plain text to a TLS port", []string{"REDIS_URL=redis://" + aclUser + ":" + aclPassword + "@" + addr + "/0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := load(t, tc.env...)
			err := pingBoth(cfg)
			switch {
			case tc.name == "plain text to a TLS port":
				if err == nil {
					t.Fatal("plain text reached a TLS-only server")
				}
			case tc.fail == "" && err != nil:
				t.Fatalf("connect: %v", err)
			case tc.fail != "" && (err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.fail))):
				t.Fatalf("err = %v, want one about %q", err, tc.fail)
			case tc.fail != "" && !IsRefusal(err):
				t.Errorf("IsRefusal(%v) = false", err)
			}
			if err != nil && strings.Contains(err.Error(), aclPassword) {
				t.Errorf("the error shows the password: %v", err)
			}
			if d := Describe(cfg); strings.Contains(d, aclPassword) || !strings.Contains(d, addr) {
				t.Errorf("Describe = %q", d)
			}
		})
	}
}

// TestCluster_RequirePass: a 3-master Cluster whose nodes require a
// password is reached, for the queues and the locks, with REDIS_PASSWORD;
// without it, a refusal.
func TestCluster_RequirePass(t *testing.T) {
	const pw = "CLUSTER-PW-19f"
	cluster := testsupport.StartRedisClusterWith(t, "--requirepass", pw, "--masterauth", pw)
	addrs := strings.Join(cluster.Addrs, ",")
	if err := pingBoth(load(t, "REDIS_CLUSTER_ADDRS="+addrs, "REDIS_PASSWORD="+pw)); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	err := pingBoth(load(t, "REDIS_CLUSTER_ADDRS="+addrs))
	if err == nil || !IsRefusal(err) {
		t.Fatalf("without the password: %v, want a refusal", err)
	}
}

// TestSentinel_Passwords: through three Sentinels that require their own
// password, to a master and replica that require theirs, queues and locks
// connect with REDIS_PASSWORD and REDIS_SENTINEL_PASSWORD; without the
// Sentinels' password, a refusal.
func TestSentinel_Passwords(t *testing.T) {
	s := testsupport.StartRedisSentinel(t)
	env := []string{"REDIS_SENTINEL_ADDRS=" + strings.Join(s.Addrs(), ","), "REDIS_SENTINEL_MASTER=" + s.MasterName,
		"REDIS_PASSWORD=" + s.Password}
	if err := pingBoth(load(t, append(env, "REDIS_SENTINEL_PASSWORD="+s.SentinelPassword)...)); err != nil {
		t.Fatalf("with both passwords: %v", err)
	}
	err := pingBoth(load(t, env...))
	if err == nil {
		t.Fatal("connected without the Sentinels' password")
	}
	if strings.Contains(err.Error(), s.Password) || strings.Contains(err.Error(), s.SentinelPassword) {
		t.Errorf("the error shows a password: %v", err)
	}
}
