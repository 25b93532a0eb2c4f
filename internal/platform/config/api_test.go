package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckAPI: API_MAX_WAITERS in range, API_CLIENTS_FILE loads, names
// only queues of QUEUES and no client holds API_TOKEN; the error names the
// variable and the client, never a token.
func TestCheckAPI(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good.yaml", "clients:\n  - {name: portal, token: SECRET-portal-0123456789, queues: [default, batch]}\n")
	for _, tc := range []struct {
		name string
		env  []string
		want string // "" for no error
	}{
		{"defaults", nil, ""},
		{"clients", []string{"API_CLIENTS_FILE=" + good}, ""},
		{"waiters zero", []string{"API_MAX_WAITERS=0"}, "API_MAX_WAITERS: must be between 1 and 100000"},
		{"waiters too many", []string{"API_MAX_WAITERS=1000000"}, "API_MAX_WAITERS"},
		{"missing file", []string{"API_CLIENTS_FILE=" + filepath.Join(dir, "missing.yaml")}, "API_CLIENTS_FILE"},
		{"queue not on QUEUES", []string{"API_CLIENTS_FILE=" + good, "QUEUES=default=1"}, `clients[0] (portal).queues[1]: "batch" is not a queue the workers serve`},
		{"client holds API_TOKEN", []string{"API_CLIENTS_FILE=" + good, "API_TOKEN=SECRET-portal-0123456789"}, "the same as API_TOKEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.CheckAPI()
			var bad *Error
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckAPI: %v", err)
			case tc.want == "":
				return
			case !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("CheckAPI: %v, want an *Error naming %q", err, tc.want)
			case strings.Contains(err.Error(), "SECRET"):
				t.Errorf("CheckAPI shows a token: %v", err)
			}
		})
	}
}
