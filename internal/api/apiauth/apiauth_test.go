package apiauth

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var served = []string{"batch", "critical", "default"}

func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func files(contents map[string]string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		c, ok := contents[path]
		if !ok {
			return nil, &os.PathError{Op: "open", Path: path, Err: os.ErrNotExist}
		}
		return []byte(c), nil
	}
}

// TestParse_YAMLAndJSON: the same clients in YAML and JSON; env: and file:
// tokens; queues default to default.
func TestParse_YAMLAndJSON(t *testing.T) {
	e := env(map[string]string{"PORTAL_TOKEN": "SECRET-portal-0123456789"})
	f := files(map[string]string{"/run/wiki": "SECRET-wiki-0123456789ab\n"})
	for name, doc := range map[string]string{
		"yaml": "clients:\n  - name: portal\n    token: env:PORTAL_TOKEN\n  - name: wiki\n    token: file:/run/wiki\n    queues: [batch]\n",
		"json": `{"clients": [{"name": "portal", "token": "env:PORTAL_TOKEN"}, {"name": "wiki", "token": "file:/run/wiki", "queues": ["batch"]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(doc), Rules{Queues: served}, e, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				token, name string
				queues      []string
			}{
				{"SECRET-portal-0123456789", "portal", []string{"default"}},
				{"SECRET-wiki-0123456789ab", "wiki", []string{"batch"}},
			} {
				got, ok := c.authenticate(digestOf(tc.token))
				if !ok || got.Name != tc.name || got.Owner != tc.name || !slices.Equal(got.Queues, tc.queues) {
					t.Errorf("token of %s: %+v %v", tc.name, got, ok)
				}
			}
			if _, ok := c.authenticate(digestOf("SECRET-portal-012345678")); ok {
				t.Error("a token one character short was accepted")
			}
		})
	}
}

// TestParse_Errors: every error names the client and the field, never a
// token.
func TestParse_Errors(t *testing.T) {
	e := env(map[string]string{"SHORT": "SECRET-1", "LONG": "SECRET-long-0123456789", "SPACE": "SECRET long 0123456789"})
	for _, tc := range []struct{ name, doc, want string }{
		{"not yaml", "clients: [", "not YAML or JSON"},
		{"unknown field", `{"clients": [{"name": "a", "token": "env:LONG", "queue": ["default"]}]}`, `unknown field "queue"`},
		{"no clients", `{"clients": []}`, "at least one client"},
		{"no name", `{"clients": [{"token": "env:LONG"}]}`, "clients[0].name: required"},
		{"bad name", `{"clients": [{"name": "a b", "token": "env:LONG"}]}`, "clients[0] (a b).name: must match"},
		{"reserved name", `{"clients": [{"name": "API_TOKEN", "token": "env:LONG"}]}`, "reserved"},
		{"same name", `{"clients": [{"name": "a", "token": "env:LONG"}, {"name": "a", "token": "literal-token-0123456789"}]}`, "clients[1] (a).name: taken by clients[0]"},
		{"no token", `{"clients": [{"name": "a"}]}`, "clients[0] (a).token: required"},
		{"unset variable", `{"clients": [{"name": "a", "token": "env:NOT_SET"}]}`, "environment variable NOT_SET is not set"},
		{"missing file", `{"clients": [{"name": "a", "token": "file:/no/such"}]}`, "reading /no/such"},
		{"short token", `{"clients": [{"name": "a", "token": "env:SHORT"}]}`, "shorter than 16"},
		{"space in token", `{"clients": [{"name": "a", "token": "env:SPACE"}]}`, "space or a control character"},
		{"shared token", `{"clients": [{"name": "a", "token": "env:LONG"}, {"name": "b", "token": "env:LONG"}]}`, "clients[1] (b).token: the same as the token of clients[0] (a)"},
		{"API_TOKEN's token", `{"clients": [{"name": "a", "token": "env:LONG"}]}`, "the same as API_TOKEN"},
		{"empty queues", `{"clients": [{"name": "a", "token": "env:LONG", "queues": []}]}`, "clients[0] (a).queues: empty"},
		{"queue not served", `{"clients": [{"name": "a", "token": "env:LONG", "queues": ["default", "urgent"]}]}`, `clients[0] (a).queues[1]: "urgent" is not a queue the workers serve`},
		{"queue twice", `{"clients": [{"name": "a", "token": "env:LONG", "queues": ["batch", "batch"]}]}`, "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := Rules{Queues: served}
			if tc.name == "API_TOKEN's token" {
				rules.APIToken = "SECRET-long-0123456789"
			}
			_, err := Parse([]byte(tc.doc), rules, e, files(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error shows a token: %v", err)
			}
		})
	}
}

// TestAuthenticator: API_TOKEN is one more client with every queue and no
// owner; a client's token gives that client; anything else is refused;
// with no token at all everyone is Anonymous.
func TestAuthenticator(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clients.json")
	if err := os.WriteFile(path, []byte(`{"clients": [{"name": "portal", "token": "portal-token-0123456789"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := New("api-token-0123456789", path, served, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token, want, owner string
		ok                 bool
		mayCritical        bool
	}{
		{"api-token-0123456789", TokenClient, "", true, true},
		{"portal-token-0123456789", "portal", "portal", true, false},
		{"portal-token-012345678", "", "", false, false},
		{"", "", "", false, false},
	} {
		c, ok := a.Authenticate(tc.token)
		if ok != tc.ok || c.Name != tc.want || c.Owner != tc.owner || ok && c.MayEnqueue("critical") != tc.mayCritical {
			t.Errorf("token %q: %+v %v, want %s (owner %q) %v", tc.token, c, ok, tc.want, tc.owner, tc.ok)
		}
	}
	open, err := New("", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := open.Authenticate("anything"); !ok || c.Name != Anonymous || c.Owner != "" || !c.MayEnqueue("critical") {
		t.Errorf("no token configured: %+v %v", c, ok)
	}
	_, err = New("", filepath.Join(t.TempDir(), "missing.yaml"), served, nil)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "API_CLIENTS_FILE") {
		t.Errorf("missing clients file: %v", err)
	}
}
