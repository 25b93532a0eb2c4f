package exportclient

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/spec"
)

// Link is a reader download link to sign: GET
// /v1/manuals/{ManualID}/{Version}.pdf on bin/api, for a manual of its
// MANUALS_FILE.
type Link struct {
	ManualID string
	Version  string
	// Paper and Landscape are the link's ?paper= and ?landscape=, which the
	// manual's allow_query must allow; zero values add nothing.
	Paper     string
	Landscape bool
	// Expires is when the link stops working; zero: DefaultLinkTTL from now.
	Expires time.Time
}

// DefaultLinkTTL is the lifetime of a link signed without Link.Expires.
const DefaultLinkTTL = 24 * time.Hour

// ErrInvalidLinkSecret matches SignLink's error for a secret that is not
// LINK_SECRET's whsec_<base64 key> entries of 32 bytes or more; it names
// the entry, never the value.
var ErrInvalidLinkSecret = spec.ErrInvalidLinkSecret

// SignLink returns the full URL of l under publicURL (bin/api's
// API_PUBLIC_URL, which may carry a path prefix of a proxy in front of it),
// signed with the first key of secret (LINK_SECRET's value). The signature
// covers the method (GET), the API path, every query parameter and the
// expiry: a reader may follow the link until it expires, and a changed link
// answers 403.
func SignLink(publicURL, secret string, l Link) (string, error) {
	keys, err := spec.ParseLinkSecrets(secret)
	if err != nil {
		return "", fmt.Errorf("exportclient: link secret: %w", err)
	}
	base, err := url.Parse(publicURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.RawQuery != "" {
		return "", errors.New("exportclient: public URL must be an http(s) URL without a query, like https://pdf.example.com")
	}
	for field, v := range map[string]string{"manual_id": l.ManualID, "version": l.Version} {
		if v == "" || strings.ContainsAny(v, "/?#") {
			return "", &FieldError{Field: field, Rule: "required, without '/', '?' or '#'"}
		}
	}
	if l.Expires.IsZero() {
		l.Expires = time.Now().Add(DefaultLinkTTL)
	}
	q := url.Values{}
	if l.Paper != "" {
		q.Set("paper", l.Paper)
	}
	if l.Landscape {
		q.Set("landscape", "true")
	}
	path := spec.LinkPath(l.ManualID, l.Version)
	q = spec.SignLink(keys[0], "GET", path, q, l.Expires)
	return strings.TrimSuffix(base.String(), "/") + path + "?" + q.Encode(), nil
}
