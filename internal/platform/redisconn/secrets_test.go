package redisconn

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// TestExportClient_SealsWithSecretsKey: the exportclient of bin/api and
// bin/enqueue takes SECRETS_KEY from the configuration, so what it stores
// beside a task is sealed; without the variable it is in clear.
func TestExportClient_SealsWithSecretsKey(t *testing.T) {
	const cookie, password = "CookieSecret-c51a08", "OwnerSecret-9e2b73"
	key := "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	redis := testsupport.StartRedis(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		env    []string
		sealed bool
	}{
		{"with SECRETS_KEY", []string{"SECRETS_KEY=" + key}, true},
		{"without", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ExportClient(load(t, append(tt.env, "REDIS_URL="+redis.URL(), "ALLOWED_HOSTS=docs.example.com")...))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "m", Version: "1", URL: "https://docs.example.com/p",
				Cookies: []exportclient.Cookie{{Name: "sid", Value: cookie}},
				Options: exportclient.Options{Encryption: &exportclient.Encryption{OwnerPassword: password}}})
			if err != nil {
				t.Fatal(err)
			}
			for k, secret := range map[string]string{"pdfexport:credentials:{" + job.TaskID + "}": cookie, "pdfexport:passwords:{" + job.TaskID + "}": password} {
				v := redis.Client().HGet(ctx, k, "data").Val()
				if strings.HasPrefix(v, "sealed:v1:") != tt.sealed || strings.Contains(v, secret) == tt.sealed {
					t.Errorf("%s holds %.60q; want sealed %v", k, v, tt.sealed)
				}
			}
		})
	}
}
