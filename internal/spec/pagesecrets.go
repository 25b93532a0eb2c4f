package spec

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// PageSecrets are options.page's headers and cookies: what a Gotenberg
// caller sends as extraHttpHeaders and cookies (an Authorization header, a
// session cookie). Like source credentials they never sit in the queue:
// the enqueuer stores them beside the task (internal/storage/sidestore) and
// the envelope's options.page keeps a PageSecretsRef naming them.
type PageSecrets struct {
	Headers []ScopedHeader `json:"headers,omitempty"`
	Cookies []PageCookie   `json:"cookies,omitempty"`
}

// Empty reports whether there is nothing to send.
func (s PageSecrets) Empty() bool { return len(s.Headers) == 0 && len(s.Cookies) == 0 }

// Secrets are p's headers and cookies (none for a nil p).
func (p *PageOptions) Secrets() PageSecrets {
	if p == nil {
		return PageSecrets{}
	}
	return PageSecrets{Headers: p.Headers, Cookies: p.Cookies}
}

// WithoutSecrets is a copy of p without its headers and cookies, which an
// envelope names by its PageSecretsRef instead. p is not changed.
func (p *PageOptions) WithoutSecrets() *PageOptions {
	c := *p
	c.Headers, c.Cookies = nil, nil
	return &c
}

// WithSecrets is a copy of p with s's headers and cookies: what a worker
// renders after reading them beside the task. p is not changed.
func (p *PageOptions) WithSecrets(s PageSecrets) *PageOptions {
	c := *p
	c.Headers, c.Cookies = s.Headers, s.Cookies
	return &c
}

// HeaderNames are the canonical header names, sorted.
func (s PageSecrets) HeaderNames() []string {
	var names []string
	for _, h := range s.Headers {
		names = append(names, http.CanonicalHeaderKey(h.Name))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// CookieNames are the cookies' names in their order.
func (s PageSecrets) CookieNames() []string {
	var names []string
	for _, c := range s.Cookies {
		names = append(names, c.Name)
	}
	return names
}

// IdentityBytes is the byte string the keyed identity of the secrets
// hashes (internal/storage/sidestore): headers and cookies sorted, so the
// same ones in any order have one identity. Its prefix keeps it apart from
// the other secrets' identities under the same key.
func (s PageSecrets) IdentityBytes() []byte {
	hs := slices.Clone(s.Headers)
	for i := range hs {
		hs[i].Name = http.CanonicalHeaderKey(hs[i].Name)
	}
	slices.SortStableFunc(hs, func(a, b ScopedHeader) int {
		return strings.Compare(a.Name+"\x00"+a.Scope+"\x00"+a.Value, b.Name+"\x00"+b.Scope+"\x00"+b.Value)
	})
	cs := slices.Clone(s.Cookies)
	slices.SortStableFunc(cs, func(a, b PageCookie) int {
		return strings.Compare(a.Domain+"\x00"+a.Path+"\x00"+a.Name+"\x00"+a.Value, b.Domain+"\x00"+b.Path+"\x00"+b.Name+"\x00"+b.Value)
	})
	b, _ := json.Marshal(PageSecrets{Headers: hs, Cookies: cs})
	return append([]byte("pdfexport:page\x00"), b...)
}

// PageSecretsRef names options.page's headers and cookies stored beside
// the task, which owns them, like CredentialsRef: Identity is their keyed
// hash and enters the artifact key; the names say what was sent.
// Envelope-only: a request that names it is refused.
type PageSecretsRef struct {
	ID          string   `json:"id"`
	Identity    string   `json:"identity"`
	HeaderNames []string `json:"header_names,omitempty"`
	CookieNames []string `json:"cookie_names,omitempty"`
}

// validate checks a reference in an envelope of page options p: the
// options keep no headers or cookies of their own beside it.
func (r *PageSecretsRef) validate(p *PageOptions) []error {
	switch {
	case r == nil:
		return nil
	case p == nil:
		return []error{fieldErr("page_secrets_ref", "given without options.page")}
	case r.ID == "" || len(r.Identity) != 64 || strings.Trim(r.Identity, "0123456789abcdef") != "":
		return []error{fieldErr("page_secrets_ref", "needs an id and a 64-hex-digit identity")}
	case !p.Secrets().Empty():
		return []error{fieldErr("page_secrets_ref", "given beside options.page's own headers or cookies; an envelope carries one or the other")}
	}
	return nil
}

// pageIdentity is the page options as the artifact key hashes them: with a
// reference, its identity alone stands for the headers and cookies (the
// values a worker filled in, and the task's id, are not hashed).
func pageIdentity(p *PageOptions, ref *PageSecretsRef) (*PageOptions, string) {
	if p == nil || ref == nil {
		return p, ""
	}
	return p.WithoutSecrets(), ref.Identity
}
