package allowlist

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The allowlist says where a render may go; Reserved says where it may
// never go whatever the list says: the worker's own listeners (admin and
// dashboard, a co-located bin/api, the egress proxy and its per-render
// listeners) and the servers it holds credentials for (Redis, S3). A page
// that reached one of them would print what it answers into its own PDF:
// the dashboard's task list, metrics, a Redis error that echoes a command.
// The allowlist cannot be trusted to keep them out, since one entry that
// names a host (or an address) without a port opens every port on it.
//
// An endpoint on a local address (loopback, unspecified, or one of this
// host's interface addresses) reserves its port on every local address: a
// listener bound to 0.0.0.0 or [::] answers on all of them, and the worker
// does not know how another process (Redis, MinIO) bound its port. An
// endpoint named by a host name is refused by that name, and by the
// addresses the name resolves to when they are special-purpose ones; a name
// on public addresses is refused by name only, since a public address may
// serve unrelated sites by name (a shared S3 or CDN front end).

// ResolveTimeout bounds one name look-up of a reserved endpoint (and the
// egress dialer's).
const ResolveTimeout = 5 * time.Second

// Reserved is the set of the worker's own endpoints. The zero value is not
// usable: NewReserved. It is safe for concurrent use; endpoints come and go
// (a render's proxy listener lives as long as the render).
type Reserved struct {
	// Lookup resolves the names of reserved endpoints; nil: the caller's
	// (the Dialer's) resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	mu    sync.RWMutex
	eps   map[int]reservedEndpoint
	next  int
	names map[string]resolvedName // resolved endpoint names, by name

	localMu sync.Mutex
	local   []netip.Addr // this host's interface addresses
	localAt time.Time
}

type reservedEndpoint struct {
	what string     // the setting or listener it comes from, e.g. ADMIN_ADDR
	host string     // canonical name; "" when addr is set
	addr netip.Addr // an IP literal (unspecified: every local address)
	port string
}

type resolvedName struct {
	addrs []netip.Addr
	at    time.Time
}

// Cache lifetimes: a reserved name is resolved again after reservedNameTTL,
// and the interface addresses are read again after localAddrsTTL.
const (
	reservedNameTTL = 30 * time.Second
	localAddrsTTL   = 5 * time.Second
)

// NewReserved returns an empty set.
func NewReserved() *Reserved {
	return &Reserved{eps: map[int]reservedEndpoint{}, names: map[string]resolvedName{}}
}

// Add reserves hostport ("host:port", "[v6]:port" or ":port", which means
// every local address), naming it what (the setting it comes from, for
// refusal messages). release removes it again. Port 0 is refused: reserve a
// listener's bound address, not the address it was asked for.
func (r *Reserved) Add(what, hostport string) (release func(), err error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("reserving %s %q: %w", what, hostport, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("reserving %s %q: port %q out of range 1-65535", what, hostport, port)
	}
	ep := reservedEndpoint{what: what, port: port}
	if host == "" {
		ep.addr = netip.IPv4Unspecified()
	} else if canon, addr, isIP := CanonicalHost(host); isIP {
		ep.addr = addr
	} else if canon == "localhost" || strings.HasSuffix(canon, ".localhost") {
		ep.addr = netip.MustParseAddr("127.0.0.1") // a local address: every local address on the port
	} else {
		ep.host = canon
	}
	r.mu.Lock()
	id := r.next
	r.next++
	r.eps[id] = ep
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.eps, id)
		r.mu.Unlock()
	}, nil
}

// endpoints returns the reserved endpoints on port.
func (r *Reserved) endpoints(port string) []reservedEndpoint {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []reservedEndpoint
	for _, ep := range r.eps {
		if ep.port == port {
			out = append(out, ep)
		}
	}
	return out
}

// HostRefusal is "" unless host:port, as a URL names it, is a reserved
// endpoint; then it says which. It resolves nothing: an IP literal (any
// spelling) is compared by address, "localhost" as loopback, and any other
// name by name. The Dialer checks the addresses it dials too.
func (r *Reserved) HostRefusal(host, port string) string {
	if r == nil {
		return ""
	}
	eps := r.endpoints(port)
	if len(eps) == 0 {
		return ""
	}
	canon, addr, isIP := CanonicalHost(host)
	var targets []netip.Addr
	switch {
	case isIP:
		targets = []netip.Addr{addr}
	case canon == "localhost" || strings.HasSuffix(canon, ".localhost"):
		// Resolved to loopback by Chromium and by the system alike.
		targets = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	}
	for _, ep := range eps {
		if !ep.addr.IsValid() && !isIP && ep.host == canon {
			return r.refusal(ep, canon, port)
		}
		for _, t := range targets {
			if ep.addr.IsValid() && r.reaches(ep.addr, t) {
				return r.refusal(ep, canon, port)
			}
		}
	}
	return ""
}

// AddrRefusal is "" unless a connection to addr:port reaches a reserved
// endpoint; then it says which. lookup resolves reserved names (nil:
// r.Lookup, else the system resolver).
func (r *Reserved) AddrRefusal(ctx context.Context, lookup func(context.Context, string) ([]netip.Addr, error), addr netip.Addr, port string) string {
	if r == nil {
		return ""
	}
	addr = addr.Unmap().WithZone("")
	for _, ep := range r.endpoints(port) {
		if ep.addr.IsValid() {
			if r.reaches(ep.addr, addr) {
				return r.refusal(ep, addr.String(), port)
			}
			continue
		}
		for _, a := range r.resolve(ctx, lookup, ep.host) {
			if IsSpecial(a) && r.reaches(a, addr) {
				return r.refusal(ep, addr.String(), port)
			}
		}
	}
	return ""
}

func (r *Reserved) refusal(ep reservedEndpoint, host, port string) string {
	return fmt.Sprintf("blocked %s: the worker's own %s (never reachable from a render, whatever the allowlist says)",
		net.JoinHostPort(host, port), ep.what)
}

// reaches reports whether a connection to target (same port) can arrive at
// a listener on ep.
func (r *Reserved) reaches(ep, target netip.Addr) bool {
	ep, target = ep.Unmap().WithZone(""), target.Unmap().WithZone("")
	if ep == target || target.IsUnspecified() { // 0.0.0.0 and [::] dial this host
		return true
	}
	return r.isLocal(ep) && r.isLocal(target)
}

// isLocal reports whether a is an address of this host.
func (r *Reserved) isLocal(a netip.Addr) bool {
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	r.localMu.Lock()
	defer r.localMu.Unlock()
	if r.local == nil || time.Since(r.localAt) > localAddrsTTL {
		r.local, r.localAt = interfaceAddrs(), time.Now()
	}
	for _, l := range r.local {
		if l == a {
			return true
		}
	}
	return false
}

func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	out := []netip.Addr{}
	if err != nil {
		return out
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap().WithZone(""))
		}
	}
	return out
}

// resolve returns the addresses of a reserved name, cached reservedNameTTL.
// A name that does not resolve reserves no address (its name still is).
func (r *Reserved) resolve(ctx context.Context, lookup func(context.Context, string) ([]netip.Addr, error), name string) []netip.Addr {
	r.mu.RLock()
	c, ok := r.names[name]
	r.mu.RUnlock()
	if ok && time.Since(c.at) < reservedNameTTL {
		return c.addrs
	}
	if r.Lookup != nil {
		lookup = r.Lookup
	}
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
	defer cancel()
	addrs, err := lookup(rctx, name)
	if err != nil {
		return nil // not cached: the next connection to this port asks again
	}
	for i, a := range addrs {
		addrs[i] = a.Unmap().WithZone("")
	}
	r.mu.Lock()
	r.names[name] = resolvedName{addrs: addrs, at: time.Now()}
	r.mu.Unlock()
	return addrs
}
