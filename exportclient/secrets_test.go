package exportclient_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
)

// TestNew_RefusesABadSecretsKey: a SecretsKey that is not whsec_ entries of
// 32 bytes or more is refused before any Redis connection, naming the field
// and the entry, never the value.
func TestNew_RefusesABadSecretsKey(t *testing.T) {
	const secret = "SECRET-not-long-enough-41d2"
	for _, tt := range []struct{ key, want string }{
		{secret, "entry 1 of 1 does not start with whsec_"},
		{"whsec_" + base64.StdEncoding.EncodeToString([]byte(secret)), "decodes to 27 bytes, want at least 32"},
	} {
		c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: "127.0.0.1:1"}, SecretsKey: tt.key})
		if err == nil {
			_ = c.Close()
		}
		if !errors.Is(err, exportclient.ErrInvalidSecretsKey) || !strings.Contains(err.Error(), "SecretsKey") || !strings.Contains(err.Error(), tt.want) ||
			strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte(secret))) {
			t.Errorf("%q: %v; want SecretsKey refused saying %q", tt.key, err, tt.want)
		}
	}
}
