package allowlist

// The allowlist decides which hosts an export may reach. It is shared by
// request validation (the source URL, through spec.HostList) and the
// renderer's network guard (every request the page makes), so both apply
// exactly the same rules.
//
// An entry is "host", "host:port" or "*.suffix" (any subdomain of suffix, not
// suffix itself). Names compare case-insensitively. Addresses that are
// loopback, private, link-local (which includes cloud metadata at
// 169.254.169.254), unspecified or otherwise non-global are refused unless an
// entry names that exact address and port, e.g. "127.0.0.1:8080"; a wildcard
// or a name that resolves to such an address never unlocks it. An entry
// naming such an address without a port is refused when the list is parsed:
// it would open every port of the address, the worker's own among them (its
// admin and dashboard, Redis). A list may also carry the worker's Reserved
// endpoints, which it never allows, whatever its entries say.

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrForbidden is returned by Check when a host or address is not allowed.
var ErrForbidden = errors.New("host not on ALLOWED_HOSTS")

type entry struct {
	host     string // lower-case name or canonical IP; for wildcards the suffix with its leading dot
	port     string // "" matches any port
	wildcard bool
	addr     netip.Addr // valid when the entry names an IP literal
}

// List is a parsed allowlist. The zero value allows nothing.
type List struct {
	entries []entry
	// reserved are endpoints never allowed (the worker's own); nil: none.
	reserved *Reserved
}

// WithReserved returns l refusing r's endpoints besides; the lists of one
// worker share one set, so a listener it opens later (a render's proxy
// listener) is refused by all of them at once.
func (l List) WithReserved(r *Reserved) List {
	l.reserved = r
	return l
}

// Reserved is the set WithReserved gave l, or nil.
func (l List) Reserved() *Reserved { return l.reserved }

// Parse parses a comma-separated list. Blank items are ignored.
func Parse(s string) (List, error) {
	var l List
	var errs []error
	for _, raw := range strings.Split(s, ",") {
		item := strings.TrimSpace(raw)
		if item == "" {
			continue
		}
		e, err := parseEntry(item)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", item, err))
			continue
		}
		l.entries = append(l.entries, e)
	}
	return l, errors.Join(errs...)
}

// MustParse is Parse for tests and constants; it panics on error.
func MustParse(s string) List {
	l, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return l
}

func parseEntry(item string) (entry, error) {
	if strings.Contains(item, "://") || strings.ContainsAny(item, "/@?#") {
		return entry{}, errors.New("want host, host:port or *.suffix, not a URL")
	}
	host, port := item, ""
	if h, p, err := net.SplitHostPort(item); err == nil {
		host, port = h, p
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return entry{}, fmt.Errorf("port %q out of range 1-65535", p)
		}
	} else if strings.HasPrefix(item, "[") && strings.HasSuffix(item, "]") {
		host = item[1 : len(item)-1]
	}
	if host == "" {
		return entry{}, errors.New("empty host")
	}
	e := entry{port: port}
	if strings.HasPrefix(host, "*.") {
		suffix := strings.ToLower(strings.TrimPrefix(host, "*"))
		if len(suffix) < 2 || strings.Contains(suffix[1:], "*") {
			return entry{}, errors.New("wildcard must be *.suffix")
		}
		e.wildcard, e.host = true, suffix
		return e, nil
	}
	if strings.Contains(host, "*") {
		return entry{}, errors.New("a wildcard is only allowed as the leading label (*.suffix)")
	}
	canon, addr, isIP := CanonicalHost(host)
	e.host, e.addr = canon, addr
	if !isIP && !validName(canon) {
		return entry{}, errors.New("not a valid host name")
	}
	if reason, special := Special(addr); isIP && special && port == "" {
		return entry{}, fmt.Errorf("special-purpose address (%s) needs an explicit port, e.g. %s: without one every port on it is allowed, the worker's own admin, API and Redis among them",
			reason, net.JoinHostPort(canon, "8080"))
	}
	return e, nil
}

func validName(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return true
}

// CanonicalHost lower-cases a host and, when it is any form of IP literal a
// browser accepts (dotted, decimal, octal, hex, short forms like 127.1,
// bracketed or IPv4-mapped IPv6), returns its canonical address. Browsers turn
// "http://2130706433/" into 127.0.0.1, so checks must too.
func CanonicalHost(host string) (canon string, addr netip.Addr, isIP bool) {
	h := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(host, "["), ""), "]"))
	h = strings.TrimSuffix(h, ".")
	if a, err := netip.ParseAddr(h); err == nil {
		a = a.Unmap().WithZone("")
		return a.String(), a, true
	}
	if a, ok := parseLegacyIPv4(h); ok {
		return a.String(), a, true
	}
	return h, netip.Addr{}, false
}

// parseLegacyIPv4 implements the WHATWG URL IPv4 parser: 1 to 4 parts, each
// decimal, octal (leading 0) or hex (0x); the last part fills the remaining
// bytes.
func parseLegacyIPv4(h string) (netip.Addr, bool) {
	if h == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			base, p = 16, p[2:]
			if p == "" {
				p = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		if p == "" {
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(p, base, 64)
		if err != nil {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	last := len(nums) - 1
	for _, n := range nums[:last] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	if nums[last] >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := nums[last]
	for i, n := range nums[:last] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// Empty reports whether the list allows nothing.
func (l List) Empty() bool { return len(l.entries) == 0 }

// String renders the list back in its canonical form.
func (l List) String() string {
	items := make([]string, 0, len(l.entries))
	for _, e := range l.entries {
		h := e.host
		if e.wildcard {
			h = "*" + h
		} else if e.addr.Is6() {
			h = "[" + h + "]"
		}
		if e.port != "" {
			h += ":" + e.port
		}
		items = append(items, h)
	}
	return strings.Join(items, ",")
}

// AllowsHost reports whether a URL host (name or IP literal, in any form) and
// port match an entry. Special IP literals match only an entry naming them
// exactly. It does not resolve names: call AllowsAddr on the address actually
// dialled.
func (l List) AllowsHost(host, port string) bool {
	if l.reserved.HostRefusal(host, port) != "" {
		return false
	}
	canon, addr, isIP := CanonicalHost(host)
	if isIP {
		return l.namesAddr(addr, port)
	}
	for _, e := range l.entries {
		if e.port != "" && e.port != port {
			continue
		}
		if e.wildcard && strings.HasSuffix(canon, e.host) || !e.wildcard && e.host == canon {
			return true
		}
	}
	return false
}

// AllowsAddr reports whether a connection to addr:port is allowed once a
// permitted name resolved to it: public addresses are, special ones only when
// an entry names the exact address (and port, if the entry has one).
func (l List) AllowsAddr(addr netip.Addr, port string) bool {
	addr = addr.Unmap().WithZone("")
	if !IsSpecial(addr) {
		return true
	}
	return l.namesAddr(addr, port)
}

// AddrRefusal is "" when AllowsAddr allows addr:port, and otherwise says
// why not, naming the special-purpose rule the address falls under.
func (l List) AddrRefusal(addr netip.Addr, port string) string {
	if l.AllowsAddr(addr, port) {
		return ""
	}
	reason, _ := Special(addr)
	return fmt.Sprintf("blocked %s: special-purpose address: %s (an ALLOWED_HOSTS entry must name it exactly)",
		net.JoinHostPort(addr.Unmap().WithZone("").String(), port), reason)
}

func (l List) namesAddr(addr netip.Addr, port string) bool {
	for _, e := range l.entries {
		if e.addr.IsValid() && e.addr == addr && (e.port == "" || e.port == port) {
			return true
		}
	}
	return false
}

// Check is AllowsHost returning an error that says why a host was refused.
func (l List) Check(host, port string) error {
	if why := l.reserved.HostRefusal(host, port); why != "" {
		return fmt.Errorf("%w: %s", ErrForbidden, why)
	}
	if l.AllowsHost(host, port) {
		return nil
	}
	canon, addr, isIP := CanonicalHost(host)
	hp := net.JoinHostPort(canon, port)
	switch {
	case isIP && IsSpecial(addr):
		reason, _ := Special(addr)
		return fmt.Errorf("%w: blocked %s: special-purpose address: %s (list it exactly to allow it)", ErrForbidden, hp, reason)
	default:
		return fmt.Errorf("%w: %s", ErrForbidden, hp)
	}
}

// Refusal says why host:port is not allowed by l, naming the setting the
// list comes from (listName): a special-purpose address says which, since
// only an entry naming it exactly unlocks it.
func (l List) Refusal(host, port, listName string) string {
	if why := l.reserved.HostRefusal(host, port); why != "" {
		return "host is not allowed: " + why
	}
	canon, addr, isIP := CanonicalHost(host)
	hp := net.JoinHostPort(canon, port)
	if reason, special := Special(addr); isIP && special {
		return fmt.Sprintf("host %s is not allowed: special-purpose address: %s (%s must name it exactly)", hp, reason, listName)
	}
	return fmt.Sprintf("host %s is not allowed: not on %s", hp, listName)
}
