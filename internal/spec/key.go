package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
)

// ArtifactKey is the storage key of the PDF a payload produces, relative to the
// storage prefix: "{manual_id}/{version}/{hex16}.pdf", where hex16 is the first
// 16 hex digits of SHA-256 over the canonical print settings and the source
// identity. Options that spell out a default, JSON field order and URL case
// or default ports do not change the key; any option that changes the output
// does. The payload must have passed Validate.
func (p Envelope) ArtifactKey() string {
	return p.artifactKey(p.identities())
}

// identities are the keyed identities of the per-export credentials and
// of the passwords ("" for none).
func (p Envelope) identities() (credentials, passwords string) {
	if p.Source.Credentials != nil {
		credentials = p.Source.Credentials.Identity
	}
	if p.EncryptionRef != nil {
		passwords = p.EncryptionRef.Identity
	}
	return credentials, passwords
}

func (p Envelope) artifactKey(credentials, passwords string) string {
	return p.ManualID + "/" + p.Version + "/" + p.contentHash(credentials, passwords)[:16] + p.Options.artifactExt()
}

// ContentHash is the full hex SHA-256 over the canonical settings and source
// identity, the hash ArtifactKey truncates.
func (p Envelope) ContentHash() string {
	return p.contentHash(p.identities())
}

// contentHash is ContentHash with credentials and passwords the keyed
// identities of the per-export credentials and of the encryption's
// passwords ("" for none).
func (p Envelope) contentHash(credentials, passwords string) string {
	type sourceIdentity struct {
		URL        string `json:"url,omitempty"`
		HTMLSHA256 string `json:"html_sha256,omitempty"`
		// Credentials is the keyed hash of per-export credentials: a
		// page rendered as one user is never reused for another.
		Credentials string `json:"credentials,omitempty"`
		// Chapters are a manual's chapters: their keys and titles.
		Chapters []chapterIdentity `json:"chapters,omitempty"`
		// Site is a site not discovered yet: its key names the request,
		// never a stored manual, which is stored under the key of the
		// chapters discovered (WithChapters).
		Site *Site `json:"site,omitempty"`
	}
	canonical := struct {
		V        int            `json:"v"`
		Source   sourceIdentity `json:"source"`
		Settings PrintSettings  `json:"settings"`
		// PageSecrets is the keyed hash of options.page's headers and
		// cookies stored beside the task.
		PageSecrets string `json:"page_secrets,omitempty"`
	}{V: PayloadVersion, Settings: p.Options.Settings()}
	switch {
	case p.Source.HTML != "":
		sum := sha256.Sum256([]byte(p.Source.HTML))
		canonical.Source.HTMLSHA256 = hex.EncodeToString(sum[:])
	case p.Source.HTMLRef != nil:
		canonical.Source.HTMLSHA256 = p.Source.HTMLRef.SHA256
	case p.Source.Chapters != nil:
		canonical.Source.Chapters = p.chaptersIdentity()
	case p.Source.Site != nil:
		s := *p.Source.Site
		s.URL = CanonicalURL(s.URL)
		canonical.Source.Site = &s
	default:
		canonical.Source.URL = CanonicalURL(p.Source.URL)
	}
	if p.Source.Chapters == nil {
		canonical.Settings.Structure = false
	}
	canonical.Source.Credentials = credentials
	canonical.Settings.Page, canonical.PageSecrets = pageIdentity(canonical.Settings.Page, p.PageSecretsRef)
	if d := canonical.Settings.Document; d != nil && d.Encryption != nil {
		d.Encryption.Passwords = passwords
	}
	// encoding/json writes struct fields in declaration order, so this byte
	// string is stable across processes and releases of the same schema.
	b, err := json.Marshal(canonical)
	if err != nil {
		panic("spec: canonical form is always marshalable: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CanonicalURL normalizes what does not change the fetched document: scheme
// and host case, a default port, an empty path and the fragment.
func CanonicalURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	if u.Path == "" {
		u.Path = "/"
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}
