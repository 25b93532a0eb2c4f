package gotenberg

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProtocolRoutes: the API module's own routes answer as Gotenberg's,
// at the default root path and under another, and what no route serves
// is Gotenberg's 404 or 405.
func TestProtocolRoutes(t *testing.T) {
	for _, root := range []string{"", "/foo/"} {
		h := New(Config{Version: "v9.9.9", RootPath: root})
		p := root
		if p == "" {
			p = "/"
		}
		for _, c := range []struct {
			method, path string
			code         int
			ctype, body  string
		}{
			{"GET", p, 200, "text/html; charset=UTF-8", rootText},
			{"GET", p + "favicon.ico", 204, "", ""},
			{"GET", p + "version", 200, "text/plain; charset=UTF-8", "v9.9.9"},
			{"GET", p + "health", 200, "application/json; charset=utf-8", `{"details":{"chromium":{"status":"up"`},
			{"HEAD", p + "health", 200, "application/json; charset=utf-8", ""},
			{"GET", p + "debug", 404, "text/plain; charset=UTF-8", "Not Found"},
			{"POST", p + "forms/libreoffice/convert", 404, "text/plain; charset=UTF-8", "Not Found"},
			{"GET", p + "forms/chromium/convert/html", 405, "text/plain; charset=UTF-8", "Method Not Allowed"},
			{"POST", p + "version", 405, "text/plain; charset=UTF-8", "Method Not Allowed"},
			{"GET", p + "prometheus/metrics", 200, "text/plain; version=0.0.4; charset=utf-8; escaping=underscores",
				"# HELP gotenberg_chromium_requests_queue_size Current number of Chromium conversion requests waiting to be treated.\n" +
					"# TYPE gotenberg_chromium_requests_queue_size gauge\ngotenberg_chromium_requests_queue_size 0\n"},
		} {
			req := httptest.NewRequest(c.method, c.path, nil)
			req.Header.Set("Gotenberg-Trace", "t-"+c.path)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			got := rec.Body.String()
			if c.method == "HEAD" {
				got = "" // the server drops a HEAD's body
			}
			if rec.Code != c.code || rec.Header().Get("Content-Type") != c.ctype || !strings.HasPrefix(got, c.body) {
				t.Errorf("%s %s: %d %q %q, want %d %q %q", c.method, c.path, rec.Code, rec.Header().Get("Content-Type"), got, c.code, c.ctype, c.body)
			}
			if tr := rec.Header().Get("Gotenberg-Trace"); tr != "t-"+c.path {
				t.Errorf("%s %s: Gotenberg-Trace %q", c.method, c.path, tr)
			}
		}
		if root != "" {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/health", nil))
			if rec.Code != 404 {
				t.Errorf("root %s: GET /health %d, want 404: every route is under the root path", root, rec.Code)
			}
		}
	}
}

// TestPaths: what a mounting server authenticates in Gotenberg's way.
func TestPaths(t *testing.T) {
	for _, c := range []struct {
		root, path   string
		owns, public bool
	}{
		{"", "/", true, false},
		{"", "/health", true, true},
		{"", "/favicon.ico", true, false},
		{"", "/forms/chromium/convert/url", true, false},
		{"", "/prometheus/metrics", true, false},
		{"", "/debug", true, false},
		{"", "/v1/exports", false, false},
		{"", "/healthz", false, false},
		{"/foo/", "/foo/", true, false},
		{"/foo/", "/foo", true, false},
		{"/foo/", "/foo/health", true, true},
		{"/foo/", "/health", false, false},
		{"/foo/", "/v1/exports", false, false},
	} {
		p := PathsAt(c.root)
		if p.Owns(c.path) != c.owns || p.Public(c.path) != c.public {
			t.Errorf("root %q %s: owns %v public %v, want %v %v", c.root, c.path, p.Owns(c.path), p.Public(c.path), c.owns, c.public)
		}
	}
	for _, bad := range []string{"foo/", "/foo", "", "/a b/"} {
		if CheckRootPath(bad) == nil {
			t.Errorf("CheckRootPath(%q) = nil", bad)
		}
	}
	if CheckRootPath("/foo/bar/") != nil || CheckRootPath("/") != nil {
		t.Error("CheckRootPath refused a good path")
	}
}

// TestUnauthorized is Gotenberg's basic-auth refusal.
func TestUnauthorized(t *testing.T) {
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Gotenberg-Trace", "who")
	rec := httptest.NewRecorder()
	Unauthorized(rec, req)
	if rec.Code != http.StatusUnauthorized || rec.Body.String() != "Unauthorized" ||
		rec.Header().Get("WWW-Authenticate") != "basic realm=Restricted" || rec.Header().Get("Gotenberg-Trace") != "who" {
		t.Errorf("%d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
}
