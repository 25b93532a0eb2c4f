package sourceauth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func env(vars map[string]string) Env {
	return func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
}

func noFiles(string) ([]byte, error) { return nil, os.ErrNotExist }

func TestParse_ResolvesValuesAndMatchesHosts(t *testing.T) {
	dir := t.TempDir()
	cookieFile := filepath.Join(dir, "cookie")
	if err := os.WriteFile(cookieFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := Parse([]byte(`{"rules": [
		{"hosts": "docs.example.com, *.internal.example", "headers": {"authorization": "env:DOCS_TOKEN", "X-Team": "manuals"},
		 "cookies": [{"name": "sid", "value": "file:`+cookieFile+`", "path": "/portal"}]},
		{"hosts": "docs.example.com:8443", "headers": {"Authorization": "Bearer override"}},
		{"hosts": "http://legacy.example.com:8080, https://api.example.com", "headers": {"Authorization": "Bearer legacy"}}
	]}`), env(map[string]string{"DOCS_TOKEN": "Bearer t0ken"}), readBounded)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		scheme, host, port string
		auth, team         string
		cookies            int
	}{
		{"https", "docs.example.com", "443", "Bearer t0ken", "manuals", 1},
		{"https", "DOCS.example.com", "443", "Bearer t0ken", "manuals", 1},
		{"wss", "docs.example.com", "443", "Bearer t0ken", "manuals", 1},
		{"https", "a.internal.example", "443", "Bearer t0ken", "manuals", 1},
		{"https", "docs.example.com", "8443", "Bearer override", "", 0}, // host:port is https on that port only
		// A bare host is an https origin on 443: not plain http, not
		// another port (before, it matched both).
		{"http", "docs.example.com", "80", "", "", 0},
		{"http", "docs.example.com", "443", "", "", 0},
		{"https", "docs.example.com", "8080", "", "", 0},
		{"http", "docs.example.com", "8443", "", "", 0},
		{"http", "legacy.example.com", "8080", "Bearer legacy", "", 0}, // an explicit http origin
		{"ws", "legacy.example.com", "8080", "Bearer legacy", "", 0},
		{"https", "legacy.example.com", "8080", "", "", 0},
		{"http", "legacy.example.com", "80", "", "", 0},
		{"https", "api.example.com", "443", "Bearer legacy", "", 0},
		{"http", "api.example.com", "443", "", "", 0},
		{"https", "internal.example", "443", "", "", 0}, // a wildcard is subdomains only
		{"https", "cdn.example.com", "443", "", "", 0},
		{"https", "docs.example.com.evil.test", "443", "", "", 0},
	}
	for _, tc := range tests {
		c := rules.For(tc.scheme, tc.host, tc.port)
		h := http.Header{}
		c.Apply(h, "/portal/page")
		if h.Get("Authorization") != tc.auth || h.Get("X-Team") != tc.team || len(c.Cookies) != tc.cookies {
			t.Errorf("%s://%s:%s: auth %q team %q cookies %d, want %q %q %d", tc.scheme, tc.host, tc.port, h.Get("Authorization"), h.Get("X-Team"), len(c.Cookies), tc.auth, tc.team, tc.cookies)
		}
		if tc.cookies > 0 && h.Get("Cookie") != "sid=from-file" {
			t.Errorf("%s: Cookie %q, want sid=from-file (file value, newline dropped)", tc.host, h.Get("Cookie"))
		}
	}
	if got := rules.files; len(got) != 1 || got[0] != cookieFile {
		t.Errorf("watched files %v", got)
	}
	// The entries written before origins are reported with what they match now.
	if n := strings.Join(rules.Narrowed, "\n"); len(rules.Narrowed) != 3 || !strings.Contains(n, `rules[0].hosts: "docs.example.com" matches https on port 443 only`) ||
		!strings.Contains(n, `rules[1].hosts: "docs.example.com:8443" matches https://docs.example.com:8443 only`) || strings.Contains(n, "legacy") {
		t.Errorf("narrowed:\n%s", n)
	}
}

// TestParse_PlainHTTPNeedsAPort: an http origin names its port.
func TestParse_PlainHTTPNeedsAPort(t *testing.T) {
	_, err := Parse([]byte(`{"rules": [{"hosts": "http://docs.example.com", "headers": {"A": "b"}}]}`), env(nil), noFiles)
	if err == nil || !strings.Contains(err.Error(), "rules[0].hosts") || !strings.Contains(err.Error(), "explicit port") {
		t.Fatalf("err %v", err)
	}
}

func TestApply_MergesCookiesByPath(t *testing.T) {
	c := spec.Credentials{Headers: map[string]string{"authorization": "Bearer x"}, Cookies: []spec.Cookie{{Name: "sid", Value: "ours"}, {Name: "api", Value: "k", Path: "/api"}}}
	tests := []struct{ path, page, want string }{
		{"/", "", "sid=ours"},
		{"/api", "theme=dark; sid=theirs", "theme=dark; sid=ours; api=k"},
		{"/api/v1", "", "sid=ours; api=k"},
		{"/apiary", "", "sid=ours"}, // not under /api
	}
	for _, tc := range tests {
		h := http.Header{"Authorization": {"Basic page"}}
		if tc.page != "" {
			h.Set("Cookie", tc.page)
		}
		c.Apply(h, tc.path)
		if h.Get("Cookie") != tc.want || h.Get("Authorization") != "Bearer x" {
			t.Errorf("%s with %q: Cookie %q Authorization %q, want %q and ours", tc.path, tc.page, h.Get("Cookie"), h.Get("Authorization"), tc.want)
		}
	}
}

// TestParse_ErrorsNameTheFieldNeverTheValue: every mistake an operator can
// make is refused, naming the rule and field; no value appears.
func TestParse_ErrorsNameTheFieldNeverTheValue(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"not json", `{"rules": [`, "not the JSON of a rules file"},
		{"unknown field", `{"rules": [{"hosts": "a.test", "header": {"A": "SECRETVALUE"}}]}`, `unknown field "header"`},
		{"no hosts", `{"rules": [{"headers": {"A": "SECRETVALUE"}}]}`, "rules[0].hosts: required"},
		{"bad host", `{"rules": [{"hosts": "https://a.test/docs", "headers": {"A": "SECRETVALUE"}}]}`, "rules[0].hosts"},
		{"nothing to add", `{"rules": [{"hosts": "a.test"}]}`, "rules[0]: has neither headers nor cookies"},
		{"unset env", `{"rules": [{"hosts": "a.test", "headers": {"A": "env:NOPE"}}]}`, `rules[0].headers["A"]: environment variable NOPE is not set`},
		{"missing file", `{"rules": [{"hosts": "a.test", "headers": {"A": "file:/nonexistent/x"}}]}`, `rules[0].headers["A"]: reading /nonexistent/x`},
		{"forbidden header", `{"rules": [{"hosts": "a.test", "headers": {"Host": "SECRETVALUE"}}]}`, "header Host cannot be set"},
		{"cookie header", `{"rules": [{"hosts": "a.test", "headers": {"cookie": "SECRETVALUE"}}]}`, "header Cookie cannot be set"},
		{"newline in value", `{"rules": [{"hosts": "a.test", "headers": {"A": "SECRET\nVALUE"}}]}`, "control character"},
		{"bad cookie value", `{"rules": [{"hosts": "a.test", "cookies": [{"name": "s", "value": "SECRET;VALUE"}]}]}`, "rules[0].cookies[0]: cookie s: value has a character"},
		{"bad cookie path", `{"rules": [{"hosts": "a.test", "cookies": [{"name": "s", "value": "SECRETVALUE", "path": "api"}]}]}`, "path must start with /"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), env(nil), noFiles)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error shows the value: %v", err)
			}
		})
	}
}

// TestWatcher_ReloadsOnChangeAndSIGHUPAndKeepsGoodRules: a changed file
// (the rules file or a value's file) and SIGHUP reload; a broken file
// keeps the rules in force.
func TestWatcher_ReloadsOnChangeAndSIGHUPAndKeepsGoodRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "auth.json")
	tokenFile := filepath.Join(dir, "token")
	write := func(p, s string) {
		t.Helper()
		tmp := p + ".new"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil { // as a Secret update swaps files
			t.Fatal(err)
		}
	}
	write(tokenFile, "one")
	write(path, `{"rules": [{"hosts": "a.test", "headers": {"Authorization": "file:`+tokenFile+`"}}]}`)
	w, err := Open(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w.PollInterval = 20 * time.Millisecond
	stop := runWatcher(t, w)

	auth := func(host string) string {
		h := http.Header{}
		w.For("https", host, "443").Apply(h, "/")
		return h.Get("Authorization")
	}
	waitFor := func(host, want string) {
		t.Helper()
		testsupport.Eventually(t, 5*time.Second, func() error {
			got := auth(host)
			return testsupport.Unless(got == want, "%s: Authorization %q, want %q", host, got, want)
		})
	}
	waitFor("a.test", "one")
	write(tokenFile, "two") // the value's file changed
	waitFor("a.test", "two")
	write(path, `{"rules": [{"hosts": "b.test", "headers": {"Authorization": "literal"}}]}`)
	waitFor("b.test", "literal")
	waitFor("a.test", "")
	write(path, `{"rules": [{"hosts": "b.test", "headers": {"Authorization": "env:NOT_SET_ANYWHERE"}}]}`)
	time.Sleep(100 * time.Millisecond)
	if got := auth("b.test"); got != "literal" {
		t.Errorf("after a broken file: %q, want the previous rules", got)
	}

	// SIGHUP reloads at once: an environment value the poll cannot see.
	stop()
	write(path, `{"rules": [{"hosts": "c.test", "headers": {"Authorization": "env:SOURCEAUTH_TEST_TOKEN"}}]}`)
	t.Setenv("SOURCEAUTH_TEST_TOKEN", "from-env")
	if err := w.Reload(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOURCEAUTH_TEST_TOKEN", "rotated")
	w.PollInterval = time.Hour
	runWatcher(t, w)
	time.Sleep(50 * time.Millisecond) // Run has subscribed to SIGHUP
	if auth("c.test") != "from-env" {
		t.Fatalf("c.test: %q", auth("c.test"))
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("c.test", "rotated")
}

// runWatcher runs w until the returned stop or the test's end.
func runWatcher(t *testing.T, w *Watcher) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return stop
}

func TestOpen_BrokenFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(`{"rules": [{"hosts": "a.test"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, nil)
	if err == nil || !strings.Contains(err.Error(), "SOURCE_AUTH_FILE "+path) {
		t.Fatalf("err %v", err)
	}
	_, err = Open(filepath.Join(t.TempDir(), "missing.json"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestWatcher_ReloadsWhenAFileTheFailedRulesNameAppears: rules that name a
// file not there yet fail to load and the previous rules stay; creating the
// file puts the new rules in force without a SIGHUP.
func TestWatcher_ReloadsWhenAFileTheFailedRulesNameAppears(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "auth.json")
	tokenFile := filepath.Join(dir, "token") // not there yet
	write := func(p, s string) {
		t.Helper()
		tmp := p + ".new"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
	write(path, `{"rules": [{"hosts": "a.test", "headers": {"Authorization": "old"}}]}`)
	w, err := Open(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w.PollInterval = 20 * time.Millisecond
	runWatcher(t, w)
	auth := func() string {
		h := http.Header{}
		w.For("https", "a.test", "443").Apply(h, "/")
		return h.Get("Authorization")
	}

	write(path, `{"rules": [{"hosts": "a.test", "headers": {"Authorization": "file:`+tokenFile+`"}}]}`)
	time.Sleep(200 * time.Millisecond) // several polls: the reload fails
	if got := auth(); got != "old" {
		t.Fatalf("rules naming a missing file: Authorization %q, want the previous rules", got)
	}
	write(tokenFile, "new")
	testsupport.Eventually(t, 3*time.Second, func() error {
		got := auth()
		return testsupport.Unless(got == "new", "after the named file appeared: Authorization %q, want %q", got, "new")
	})
}
