package testsupport

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// AssertRedisHoldsNo fails t when any value in rdb (strings, hashes, lists,
// sets, sorted sets: asynq's tasks, results and queues included) or any key
// name contains one of secrets.
func AssertRedisHoldsNo(t testing.TB, rdb redis.UniversalClient, secrets ...string) {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatalf("listing Redis keys: %v", err)
	}
	for _, k := range keys {
		var parts []string
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "string":
			parts = []string{rdb.Get(ctx, k).Val()}
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				parts = append(parts, f, v)
			}
		case "list":
			parts = rdb.LRange(ctx, k, 0, -1).Val()
		case "set":
			parts = rdb.SMembers(ctx, k).Val()
		case "zset":
			parts = rdb.ZRange(ctx, k, 0, -1).Val()
		case "stream":
			for _, m := range rdb.XRange(ctx, k, "-", "+").Val() {
				for f, v := range m.Values {
					s, _ := v.(string)
					parts = append(parts, f, s)
				}
			}
		}
		text := k + "\x00" + strings.Join(parts, "\x00")
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("Redis key %s holds the secret %q", k, s)
			}
		}
	}
}
