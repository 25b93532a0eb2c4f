package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Source credentials: headers and cookies a request to a private source
// gets. One type serves every stage: a caller's per-export credentials in its
// request, what the enqueuer stores beside the task (internal/storage/sidestore), the
// operator's rules (sourceauth) and what the egress proxy adds to a request.
// Per-export credentials apply only to the source URL's exact host and port,
// they are secrets (never logged, never shown), and they never sit in the
// queue: the envelope keeps a CredentialsRef naming them.

// Credentials are headers and cookies for the requests to one origin.
// Header names are compared case-insensitively.
type Credentials struct {
	Headers map[string]string `json:"headers,omitempty"`
	Cookies []Cookie          `json:"cookies,omitempty"`
}

// Empty reports whether there is nothing to send.
func (c Credentials) Empty() bool { return len(c.Headers) == 0 && len(c.Cookies) == 0 }

// Canonical returns c with canonical header names (a later duplicate name
// wins) and cookies in their given order, at most one per name and path
// (the later wins).
func (c Credentials) Canonical() Credentials {
	return Credentials{}.Merge(c)
}

// Merge returns c with o's headers and cookies added, header names
// canonical; o wins where both set the same header, or the same cookie name
// and path. c and o are not changed.
func (c Credentials) Merge(o Credentials) Credentials {
	out := Credentials{}
	for _, src := range []Credentials{c, o} {
		for _, n := range slices.Sorted(maps.Keys(src.Headers)) {
			if out.Headers == nil {
				out.Headers = map[string]string{}
			}
			out.Headers[http.CanonicalHeaderKey(n)] = src.Headers[n]
		}
		for _, ck := range src.Cookies {
			out.Cookies = slices.DeleteFunc(out.Cookies, func(x Cookie) bool { return x.Name == ck.Name && x.Path == ck.Path })
			out.Cookies = append(out.Cookies, ck)
		}
	}
	return out
}

// HeaderNames are the canonical header names, sorted.
func (c Credentials) HeaderNames() []string {
	var names []string
	for n := range c.Headers {
		names = append(names, http.CanonicalHeaderKey(n))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// CookieNames are the cookies' names in their order.
func (c Credentials) CookieNames() []string {
	var names []string
	for _, ck := range c.Cookies {
		names = append(names, ck.Name)
	}
	return names
}

// Apply adds the credentials to the header of a request for path: headers
// replace the page's, cookies whose path matches replace the page's cookies
// of the same name and join the rest in one Cookie header.
func (c Credentials) Apply(h http.Header, path string) {
	for n, v := range c.Headers {
		h.Set(n, v)
	}
	var ours []Cookie
	for _, ck := range c.Cookies {
		if ck.PathMatches(path) {
			ours = append(ours, ck)
		}
	}
	if len(ours) == 0 {
		return
	}
	var parts []string
	for _, line := range h.Values("Cookie") {
		for pair := range strings.SplitSeq(line, ";") {
			pair = strings.TrimSpace(pair)
			name, _, _ := strings.Cut(pair, "=")
			if pair == "" || slices.ContainsFunc(ours, func(ck Cookie) bool { return ck.Name == name }) {
				continue
			}
			parts = append(parts, pair)
		}
	}
	for _, ck := range ours {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	h.Set("Cookie", strings.Join(parts, "; "))
}

// IdentityBytes is the byte string the keyed identity of the credentials
// hashes (internal/storage/sidestore): header names canonical and sorted, cookies sorted by
// name and path ("" is "/"), so the same credentials in any order or case
// have one identity.
func (c Credentials) IdentityBytes() []byte {
	type header struct{ N, V string }
	cc := c.Canonical()
	hs := make([]header, 0, len(cc.Headers))
	for _, n := range slices.Sorted(maps.Keys(cc.Headers)) {
		hs = append(hs, header{n, cc.Headers[n]})
	}
	cs := slices.Clone(cc.Cookies)
	for i := range cs {
		if cs[i].Path == "" {
			cs[i].Path = "/"
		}
	}
	slices.SortFunc(cs, func(a, b Cookie) int {
		if a.Name != b.Name {
			return strings.Compare(a.Name, b.Name)
		}
		return strings.Compare(a.Path, b.Path)
	})
	b, _ := json.Marshal(struct {
		H []header
		C []Cookie
	}{hs, cs})
	return b
}

// Cookie is a cookie sent with the requests of a render.
type Cookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Path limits the cookie to request paths under it (RFC 6265 path
	// match). "" is "/".
	Path string `json:"path,omitempty"`
}

// CredentialsRef names credentials stored beside the task, which owns them:
// a worker reads them only for the task that stored them (checked in Redis),
// whatever ID a payload names. Identity is the keyed hash of the credentials
// (internal/storage/sidestore): it is part of the artifact's identity and reveals nothing
// about them. The names are kept so status and the dashboard can say which
// headers and cookies were sent. Envelope-only: a request that names it is
// refused.
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

// validate checks a request's per-export credentials for a source whose URL
// is url ("" for an HTML source, which has no host to send them to).
func (c Credentials) validate(url string) []error {
	if c.Empty() {
		return nil
	}
	if url == "" {
		return []error{fieldErr("source.headers", "credentials go to the host of source.url only; an html, chapters or site source has none")}
	}
	var errs []error
	if len(c.Headers) > MaxCredentialHeaders {
		errs = append(errs, fieldErr("source.headers", "more than %d headers", MaxCredentialHeaders))
	}
	if len(c.Cookies) > MaxCredentialCookies {
		errs = append(errs, fieldErr("source.cookies", "more than %d cookies", MaxCredentialCookies))
	}
	size := 0
	canonical := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(c.Headers)) {
		size += len(name) + len(c.Headers[name])
		if err := CheckHeader(name, c.Headers[name]); err != nil {
			errs = append(errs, fieldErr("source.headers", "%v", err))
		}
		if cn := http.CanonicalHeaderKey(name); canonical[cn] {
			errs = append(errs, fieldErr("source.headers", "header %s is listed twice (names are case-insensitive)", cn))
		} else {
			canonical[cn] = true
		}
	}
	seen := map[string]bool{}
	for i, ck := range c.Cookies {
		size += len(ck.Name) + len(ck.Value) + len(ck.Path)
		if err := ck.Check(); err != nil {
			errs = append(errs, fieldErr(fmt.Sprintf("source.cookies[%d]", i), "%v", err))
		}
		if seen[ck.Name+"\x00"+ck.Path] {
			errs = append(errs, fieldErr(fmt.Sprintf("source.cookies[%d]", i), "cookie %s with path %q is listed twice", ck.Name, ck.Path))
		}
		seen[ck.Name+"\x00"+ck.Path] = true
	}
	if size > MaxCredentialBytes {
		errs = append(errs, fieldErr("source.headers", "headers and cookies larger than %d bytes together", MaxCredentialBytes))
	}
	return errs
}

// validate checks a reference in an envelope.
func (r *CredentialsRef) validate(url string) []error {
	switch {
	case r == nil:
		return nil
	case url == "":
		return []error{fieldErr("source.credentials_ref", "credentials go to the host of source.url only; an html, chapters or site source has none")}
	case r.ID == "" || len(r.Identity) != 64 || strings.Trim(r.Identity, "0123456789abcdef") != "":
		return []error{fieldErr("source.credentials_ref", "needs an id and a 64-hex-digit identity")}
	}
	return nil
}
