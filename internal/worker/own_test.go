package worker

import (
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/platform/config"
)

// TestOwnEndpoints: every endpoint the configuration names for the worker
// (bin/api, each Redis, S3) is reserved, with the port its scheme implies,
// and refused naming its variable; the admin address is added once bound.
func TestOwnEndpoints(t *testing.T) {
	cfg, err := config.Load([]string{
		"REDIS_URL=redis://10.1.2.3:6380/0", "LOCK_REDIS_URL=rediss://locks.internal",
		"S3_ENDPOINT=http://minio.internal:9000", "API_ADDR=:8081",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg.RedisClusterAddrs = []string{"10.9.0.1:7000", " 10.9.0.2:7001"}
	own, err := ownEndpoints(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ host, port, what string }{
		{"10.1.2.3", "6380", "REDIS_URL"},
		{"locks.internal", "6379", "LOCK_REDIS_URL"},
		{"minio.internal", "9000", "S3_ENDPOINT"},
		{"127.0.0.1", "8081", "API_ADDR"}, // an empty host: every local address
		{"10.9.0.2", "7001", "REDIS_CLUSTER_ADDRS"},
		{"10.1.2.3", "6379", ""},
		{"docs.example.com", "443", ""},
	} {
		why := own.HostRefusal(tc.host, tc.port)
		if tc.what == "" && why != "" || tc.what != "" && !strings.Contains(why, "own "+tc.what) {
			t.Errorf("HostRefusal(%s, %s) = %q, want it to name %q", tc.host, tc.port, why, tc.what)
		}
	}
}
