package spec

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Per-export source credentials: headers and cookies a caller sends to render
// a page as one of its users. They apply only to the source URL's exact host
// and port, they are secrets (never logged, never shown), and they never sit
// in the queue: the enqueuer stores them beside the task (credstore) and the
// payload keeps a CredentialsRef naming them.

// Cookie is a cookie sent with the requests of a render.
type Cookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Path limits the cookie to request paths under it (RFC 6265 path
	// match). "" is "/".
	Path string `json:"path,omitempty"`
}

// CredentialsRef names credentials stored beside the task. Identity is the
// keyed hash of the credentials (credstore): it is part of the artifact's
// identity and reveals nothing about them. The names are kept so status and
// the dashboard can say which headers and cookies were sent.
type CredentialsRef struct {
	ID          string   `json:"id"`
	Identity    string   `json:"identity"`
	HeaderNames []string `json:"header_names,omitempty"`
	CookieNames []string `json:"cookie_names,omitempty"`
}

// Limits of per-export credentials.
const (
	MaxCredentialHeaders = 32
	MaxCredentialCookies = 64
	MaxCredentialBytes   = 16 << 10 // all names and values together
)

// HasCredentials reports whether s carries per-export credentials, inline or
// by reference.
func (s Source) HasCredentials() bool {
	return len(s.Headers) > 0 || len(s.Cookies) > 0 || s.Credentials != nil
}

// forbiddenHeaders are the headers a credential may not set: the proxy and
// HTTP framing own them, and a cookie belongs in cookies.
var forbiddenHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Upgrade": true, "Keep-Alive": true, "Te": true, "Trailer": true, "Expect": true,
	"Cookie": true, "Proxy-Authorization": true, "Proxy-Connection": true,
}

// CheckHeader checks one credential header; the error says why it is refused
// without quoting the value.
func CheckHeader(name, value string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("header name %q is not an HTTP token", name)
	}
	if forbiddenHeaders[http.CanonicalHeaderKey(name)] {
		return fmt.Errorf("header %s cannot be set (use cookies for Cookie)", http.CanonicalHeaderKey(name))
	}
	if value == "" {
		return fmt.Errorf("header %s: empty value", http.CanonicalHeaderKey(name))
	}
	for _, c := range []byte(value) {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return fmt.Errorf("header %s: value contains a control character", http.CanonicalHeaderKey(name))
		}
	}
	return nil
}

// Check checks a cookie; the error names the cookie, never its value.
func (c Cookie) Check() error {
	if c.Name == "" || strings.IndexFunc(c.Name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("cookie name %q is not an HTTP token", c.Name)
	}
	if c.Value == "" {
		return fmt.Errorf("cookie %s: empty value", c.Name)
	}
	for _, b := range []byte(c.Value) {
		// RFC 6265 cookie-octet: no controls, whitespace, DQUOTE, comma,
		// semicolon or backslash.
		if b < 0x21 || b > 0x7e || b == '"' || b == ',' || b == ';' || b == '\\' {
			return fmt.Errorf("cookie %s: value has a character a cookie cannot carry (space, quote, comma, semicolon, backslash or non-ASCII)", c.Name)
		}
	}
	if c.Path != "" && (!strings.HasPrefix(c.Path, "/") || strings.ContainsAny(c.Path, "; \t\r\n")) {
		return fmt.Errorf("cookie %s: path must start with / and have no spaces or semicolons", c.Name)
	}
	return nil
}

// PathMatches reports whether the cookie applies to a request for path
// (RFC 6265 section 5.1.4).
func (c Cookie) PathMatches(path string) bool {
	cp := c.Path
	if cp == "" || cp == "/" {
		return true
	}
	if path == "" {
		path = "/"
	}
	if path == cp {
		return true
	}
	return strings.HasPrefix(path, cp) && (strings.HasSuffix(cp, "/") || path[len(cp)] == '/')
}

func isTokenChar(r rune) bool {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// validateCredentials checks inline credentials or a reference.
func (s Source) validateCredentials() []error {
	if !s.HasCredentials() {
		return nil
	}
	if s.URL == "" {
		return []error{fieldErr("source.headers", "credentials apply to a source URL's host; an HTML source has none")}
	}
	var errs []error
	if s.Credentials != nil {
		if len(s.Headers) > 0 || len(s.Cookies) > 0 {
			errs = append(errs, fieldErr("source.credentials_ref", "not together with source.headers or source.cookies"))
		}
		if s.Credentials.ID == "" || len(s.Credentials.Identity) != 64 || strings.Trim(s.Credentials.Identity, "0123456789abcdef") != "" {
			errs = append(errs, fieldErr("source.credentials_ref", "needs an id and a 64-hex-digit identity"))
		}
		return errs
	}
	if len(s.Headers) > MaxCredentialHeaders {
		errs = append(errs, fieldErr("source.headers", "more than %d headers", MaxCredentialHeaders))
	}
	if len(s.Cookies) > MaxCredentialCookies {
		errs = append(errs, fieldErr("source.cookies", "more than %d cookies", MaxCredentialCookies))
	}
	size := 0
	for _, name := range slices.Sorted(maps.Keys(s.Headers)) {
		size += len(name) + len(s.Headers[name])
		if err := CheckHeader(name, s.Headers[name]); err != nil {
			errs = append(errs, fieldErr("source.headers", "%v", err))
		}
	}
	seen := map[string]bool{}
	for i, c := range s.Cookies {
		size += len(c.Name) + len(c.Value) + len(c.Path)
		if err := c.Check(); err != nil {
			errs = append(errs, fieldErr(fmt.Sprintf("source.cookies[%d]", i), "%v", err))
		}
		if seen[c.Name+"\x00"+c.Path] {
			errs = append(errs, fieldErr(fmt.Sprintf("source.cookies[%d]", i), "cookie %s with path %q is listed twice", c.Name, c.Path))
		}
		seen[c.Name+"\x00"+c.Path] = true
	}
	if size > MaxCredentialBytes {
		errs = append(errs, fieldErr("source.headers", "headers and cookies larger than %d bytes together", MaxCredentialBytes))
	}
	return errs
}
