package spec

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reader download links (GET /v1/manuals/{manual_id}/{version}.pdf on
// bin/api) are signed the way S3 presigned URLs are: the query carries
// LinkExpires (unix seconds) and LinkSignature, the unpadded base64url
// HMAC-SHA256, under a LINK_SECRET key, of
//
//	"<METHOD>\n<path>\n<sorted query without signature>\n<expires>"
//
// The path is the API's own (/v1/manuals/…), never the public prefix a
// proxy adds in front of it, so a link stays valid whatever API_PUBLIC_URL
// looks like. The sorted query is every parameter but the signature, keys
// and then values in byte order, escaped as url.Values.Encode does; adding,
// dropping or changing any parameter breaks the signature.
const (
	LinkExpires   = "expires"
	LinkSignature = "signature"
)

// Link errors callers branch on; all match ErrLinkRefused.
var (
	ErrLinkRefused   = errors.New("link refused")
	ErrLinkUnsigned  = fmt.Errorf("%w: not signed (no %s or %s parameter)", ErrLinkRefused, LinkExpires, LinkSignature)
	ErrLinkExpired   = fmt.Errorf("%w: expired", ErrLinkRefused)
	ErrLinkSignature = fmt.Errorf("%w: wrong signature", ErrLinkRefused)
)

// ErrInvalidLinkSecret: LINK_SECRET is not a list of whsec_<base64 key>
// entries of at least LinkKeyBytes bytes. Its message never shows a value.
var ErrInvalidLinkSecret = errors.New("link secret invalid")

// LinkKeyBytes is the shortest key a LINK_SECRET entry may decode to.
const LinkKeyBytes = 32

// ParseLinkSecrets parses LINK_SECRET, CALLBACK_SECRET's form: whsec_<base64
// key> entries separated by spaces or commas; the first signs, every one
// verifies, so a key rotates without breaking the links already handed out
// (prepend the new key, drop the old one once its links have expired).
func ParseLinkSecrets(s string) ([][]byte, error) {
	return parseKeyList(s, ErrInvalidLinkSecret, LinkKeyBytes)
}

// LinkPath is the API path of a manual version's reader link.
func LinkPath(manualID, version string) string {
	return "/v1/manuals/" + url.PathEscape(manualID) + "/" + url.PathEscape(version) + ".pdf"
}

// SignLink returns query with LinkExpires and LinkSignature set, signed
// with key for method and path. query is not changed.
func SignLink(key []byte, method, path string, query url.Values, expires time.Time) url.Values {
	q := url.Values{}
	for k, v := range query {
		if k != LinkSignature {
			q[k] = slices.Clone(v)
		}
	}
	q.Set(LinkExpires, strconv.FormatInt(expires.Unix(), 10))
	q.Set(LinkSignature, base64.RawURLEncoding.EncodeToString(linkMAC(key, method, path, q)))
	return q
}

// VerifyLink checks the signature and expiry of a link: one of keys must
// have signed method, path and query, and its LinkExpires must be after
// now. A HEAD is checked as the GET it precedes. Its errors match
// ErrLinkRefused and one of ErrLinkUnsigned, ErrLinkExpired,
// ErrLinkSignature.
func VerifyLink(keys [][]byte, method, path string, query url.Values, now time.Time) error {
	exp, sig := query.Get(LinkExpires), query.Get(LinkSignature)
	if exp == "" || sig == "" {
		return ErrLinkUnsigned
	}
	if len(query[LinkExpires]) != 1 || len(query[LinkSignature]) != 1 {
		return ErrLinkSignature
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return ErrLinkSignature
	}
	if method == "HEAD" {
		method = "GET"
	}
	ok := false
	for _, k := range keys {
		// Every key is tried, without stopping at a match: the time taken
		// says nothing about which key matched.
		if hmac.Equal(got, linkMAC(k, method, path, query)) {
			ok = true
		}
	}
	if !ok {
		return ErrLinkSignature
	}
	// The expiry is checked after the signature: an attacker who edits it
	// learns nothing but "wrong signature".
	sec, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return ErrLinkSignature
	}
	if !now.Before(time.Unix(sec, 0)) {
		return fmt.Errorf("%w at %s", ErrLinkExpired, time.Unix(sec, 0).UTC().Format(time.RFC3339))
	}
	return nil
}

func linkMAC(key []byte, method, path string, query url.Values) []byte {
	rest := url.Values{}
	for k, v := range query {
		if k != LinkSignature {
			s := slices.Clone(v)
			slices.Sort(s)
			rest[k] = s
		}
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strings.ToUpper(method) + "\n" + path + "\n" + rest.Encode() + "\n" + query.Get(LinkExpires)))
	return m.Sum(nil)
}
