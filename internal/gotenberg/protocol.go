package gotenberg

import (
	"errors"
	"net/http"
	"strings"
)

// Gotenberg's API module answers these beside its modules' routes: the
// root and favicon (behind its authentication), /health (never behind it),
// /version. Its debug route is off by default, and so a 404 here.
const rootText = `Hey, Gotenberg has no UI, it's an API. Head to the <a href="https://gotenberg.dev">documentation</a> to learn how to interact with it 🚀`

// DefaultRootPath is Gotenberg's --api-root-path default.
const DefaultRootPath = "/"

// CheckRootPath refuses what Gotenberg's --api-root-path refuses: a path
// that does not start and end with "/".
func CheckRootPath(p string) error {
	if !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/") {
		return errors.New("must start and end with /")
	}
	if strings.ContainsAny(p, " {}\t\n") {
		return errors.New("may not contain spaces or braces")
	}
	return nil
}

// Paths tells which request paths are Gotenberg's under a root path, for
// the server that mounts the routes behind its authentication.
type Paths struct{ root string }

// PathsAt is the Paths of root ("" is DefaultRootPath).
func PathsAt(root string) Paths {
	if root == "" {
		root = DefaultRootPath
	}
	return Paths{root: root}
}

// Mounts are the patterns the routes answer under, for a ServeMux that
// has its own routes beside them: at the root path "/" only Gotenberg's
// own paths, so the mounting server's other paths stay its own.
func (p Paths) Mounts() []string {
	if p.root != "/" {
		return []string{p.root}
	}
	return []string{"/{$}", "/favicon.ico", "/health", "/version", "/debug", "/forms/", "/prometheus/"}
}

// Owns reports whether path is one of Gotenberg's, answered in its shape
// (a 401 as its basic authentication answers it, a password of Basic
// authentication taken as the token).
func (p Paths) Owns(path string) bool {
	if p.root != "/" {
		return strings.HasPrefix(path, p.root) || path+"/" == p.root
	}
	switch path {
	case "/", "/favicon.ico", "/health", "/version", "/debug":
		return true
	}
	return strings.HasPrefix(path, "/forms/") || strings.HasPrefix(path, "/prometheus/")
}

// Public reports whether path needs no authentication: Gotenberg's
// /health has none.
func (p Paths) Public(path string) bool { return path == p.root+"health" }

// Unauthorized answers as Gotenberg's basic authentication refuses a
// request: 401, a Basic challenge, its plain-text status, the trace echoed.
func Unauthorized(w http.ResponseWriter, r *http.Request) {
	if t := r.Header.Get(traceHeader); t != "" {
		w.Header().Set(traceHeader, printable(t))
	}
	w.Header().Set("WWW-Authenticate", "basic realm=Restricted")
	writeText(w, http.StatusUnauthorized, http.StatusText(http.StatusUnauthorized))
}

// protocolRoutes are the API module's own routes, under the root path.
func (h *handler) protocolRoutes() {
	h.handle("GET {$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=UTF-8")
		_, _ = w.Write([]byte(rootText))
	})
	h.handle("GET favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h.handle("GET health", h.health) // and HEAD: ServeMux's GET patterns match it
	h.handle("GET version", func(w http.ResponseWriter, r *http.Request) { writeText(w, http.StatusOK, h.cfg.Version) })
	h.handle("GET "+metricsPath, h.metrics.ServeHTTP)
}

// unrouted answers a request no route takes, in Gotenberg's error shape:
// 405 when the path has a route for another method, else 404, as
// Gotenberg answers a route it does not have (its debug route, off by
// default, and the LibreOffice module's, which this Chromium-only server
// does not have).
func (h *handler) unrouted(w http.ResponseWriter, r *http.Request) bool {
	if _, pattern := h.mux.Handler(r); pattern != "" {
		return false
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := h.mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeText(w, http.StatusMethodNotAllowed, http.StatusText(http.StatusMethodNotAllowed))
		return true
	}
	writeText(w, http.StatusNotFound, http.StatusText(http.StatusNotFound))
	return true
}

// handle registers pattern ("METHOD path", the path relative to the root
// path) under the root path.
func (h *handler) handle(pattern string, fn http.HandlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	h.mux.HandleFunc(method+" "+h.cfg.RootPath+strings.TrimPrefix(path, "/"), fn)
}
