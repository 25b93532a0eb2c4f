// Package redact removes secrets from what pdfexport writes to logs, errors,
// task results and the dashboard: the password of a URL's user information
// (a Redis or storage URL) and the values of a URL's query string (signed
// links, access tokens of a source page). Paths, hosts and query keys stay,
// so a message still says which page or server it is about.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces what is redacted.
const Mask = "REDACTED"

// URL returns raw with the password of its user information and the values
// of its query replaced by Mask, and its fragment dropped. A string that does
// not parse as a URL loses everything between "://" and the last "@" of its
// authority, and everything after "?".
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return roughly(raw)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Mask)
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = Mask
		} else {
			for k, vs := range q {
				for i := range vs {
					vs[i] = Mask
				}
				q[k] = vs
			}
			u.RawQuery = q.Encode()
		}
	}
	u.Fragment, u.RawFragment = "", ""
	s := u.String()
	// url.URL escapes the mask in user information; keep it readable.
	return strings.ReplaceAll(s, url.QueryEscape(Mask), Mask)
}

// roughly redacts a string that is not a parsable URL.
func roughly(raw string) string {
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i] + "?" + Mask
	}
	if i := strings.Index(s, "://"); i >= 0 {
		rest := s[i+3:]
		end := strings.IndexAny(rest, "/?")
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
			s = s[:i+3] + Mask + rest[at:]
		}
	}
	return s
}

// urlInText finds URLs in free text: a scheme, "://", then anything up to
// white space or a quote.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// Text redacts every URL in s.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, URL)
}

// Error returns err with a message redacted by Text; errors.Is and errors.As
// still see the original chain. nil stays nil.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := Text(err.Error())
	if msg == err.Error() {
		return err
	}
	return &redacted{msg: msg, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
