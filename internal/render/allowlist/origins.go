package allowlist

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// Origins are the hosts credentials are bound to, each entry an origin: a bare "host",
// "host:port" or "*.suffix" (also "https://…") is https only, on port 443
// unless a port is given; plain http needs an explicit "http://host:port".
// Credentials never go to another scheme, host or port.
type Origins struct {
	https, http List
}

// Allows reports whether a request to scheme://host:port is one of the
// origins. scheme is "https" or "http" (ws and wss count as their http
// forms).
func (o Origins) Allows(scheme, host, port string) bool {
	switch scheme {
	case "https", "wss":
		return o.https.AllowsHost(host, port)
	case "http", "ws":
		return o.http.AllowsHost(host, port)
	}
	return false
}

func (o Origins) Empty() bool { return o.https.Empty() && o.http.Empty() }

// ParseOrigins parses a comma-separated list of origins. narrowed lists, for each entry whose
// meaning the origin rule narrowed (before, an entry matched plain http too,
// and any port when it named none), what it matches now.
func ParseOrigins(s string) (o Origins, narrowed []string, err error) {
	var https, http []string
	var errs []error
	for _, raw := range strings.Split(s, ",") {
		item := strings.TrimSpace(raw)
		if item == "" {
			continue
		}
		lower := strings.ToLower(item)
		switch {
		case strings.HasPrefix(lower, "http://"):
			hp := strings.TrimSuffix(item[len("http://"):], "/")
			if !hasPort(hp) {
				errs = append(errs, fmt.Errorf("%q: plain http needs an explicit port (http://host:port)", item))
				continue
			}
			http = append(http, hp)
		case strings.HasPrefix(lower, "https://"):
			hp := strings.TrimSuffix(item[len("https://"):], "/")
			if !hasPort(hp) {
				hp += ":443"
			}
			https = append(https, hp)
		default:
			if hasPort(item) {
				narrowed = append(narrowed, fmt.Sprintf("%q matches https://%s only (no longer plain http on that port; write http://%s for it)", item, item, item))
				https = append(https, item)
			} else {
				narrowed = append(narrowed, fmt.Sprintf("%q matches https on port 443 only (no longer other ports nor plain http; write https://%s:PORT or http://%s:PORT for those)", item, item, item))
				https = append(https, item+":443")
			}
		}
	}
	var perr error
	o.https, perr = Parse(strings.Join(https, ","))
	errs = append(errs, perr)
	o.http, perr = Parse(strings.Join(http, ","))
	errs = append(errs, perr)
	return o, narrowed, errors.Join(errs...)
}

// hasPort reports whether a host entry names a port ("h:p", "[v6]:p").
func hasPort(hp string) bool {
	_, _, err := net.SplitHostPort(hp)
	return err == nil
}
