package spec

import "strings"

// MaxTracestateBytes bounds the tracestate field (the W3C limit that
// propagators must accept).
const MaxTracestateBytes = 512

// maxTracestateMembers is the W3C limit of list members in tracestate.
const maxTracestateMembers = 32

// validateTraceContext checks traceparent and tracestate. A malformed value
// is bad input like any other field (a FieldError naming it): the client
// and the HTTP API refuse it before enqueue, so no worker sees it. Clients
// that propagate a context they received (an HTTP header) drop a malformed
// one instead, as W3C asks of receivers; only a value written into the
// payload itself is refused.
func (p Envelope) validateTraceContext() []error {
	var errs []error
	if p.Traceparent != "" && !ValidTraceparent(p.Traceparent) {
		errs = append(errs, fieldErr("traceparent", "must be a W3C traceparent: 00-<32 lower-case hex trace id, not all zero>-<16 lower-case hex parent id, not all zero>-<2 hex flags>"))
	}
	if p.Tracestate == "" {
		return errs
	}
	switch {
	case p.Traceparent == "":
		errs = append(errs, fieldErr("tracestate", "needs traceparent"))
	case len(p.Tracestate) > MaxTracestateBytes:
		errs = append(errs, fieldErr("tracestate", "longer than %d bytes", MaxTracestateBytes))
	case !validTracestate(p.Tracestate):
		errs = append(errs, fieldErr("tracestate", "must be a W3C tracestate: at most %d comma-separated key=value members of printable ASCII", maxTracestateMembers))
	}
	return errs
}

// ValidTraceparent reports whether s is a W3C traceparent header value:
// version-traceid-parentid-flags in lower-case hex, version not ff, neither
// id all zeros. A version above 00 may carry more fields after a '-' (the
// W3C rule for versions this parser does not know).
func ValidTraceparent(s string) bool {
	const length = 55 // 2+1+32+1+16+1+2
	if len(s) < length || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	version, traceID, parentID, flags := s[0:2], s[3:35], s[36:52], s[53:55]
	if !lowerHex(version) || version == "ff" || !lowerHex(traceID) || !lowerHex(parentID) || !lowerHex(flags) {
		return false
	}
	if strings.Trim(traceID, "0") == "" || strings.Trim(parentID, "0") == "" {
		return false
	}
	if len(s) > length {
		return version != "00" && s[length] == '-'
	}
	return true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// validTracestate checks the shape of a tracestate list: members
// "key=value" separated by commas (optional spaces or tabs around them),
// printable ASCII, at most maxTracestateMembers. It does not check the
// key grammar of vendors.
func validTracestate(s string) bool {
	members := 0
	for m := range strings.SplitSeq(s, ",") {
		m = strings.Trim(m, " \t")
		if m == "" {
			continue // empty members are allowed and ignored
		}
		members++
		k, v, ok := strings.Cut(m, "=")
		if !ok || k == "" || v == "" || members > maxTracestateMembers {
			return false
		}
		for i := 0; i < len(m); i++ {
			if c := m[i]; c < 0x20 || c > 0x7e {
				return false
			}
		}
	}
	return members > 0
}
