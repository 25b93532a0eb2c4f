package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

// ErrRefused is the cause of every Refusal.
var ErrRefused = errors.New("egress refused")

// Refusal is an error saying why a Dialer would not connect: the host is not
// on the list, or it resolves only to special-purpose addresses the list
// does not name.
type Refusal struct{ Reason string }

func (e *Refusal) Error() string { return "egress refused: " + e.Reason }
func (e *Refusal) Unwrap() error { return ErrRefused }

// Dial timeouts of a Dialer without its own.
const (
	DefaultResolveTimeout = allowlist.ResolveTimeout
	DefaultDialTimeout    = 10 * time.Second
)

// Dialer connects only where a List allows: the host must be on it, a name
// is resolved once and only the addresses AllowsAddr accepts are dialled, so
// a name cannot smuggle a connection to loopback, a private network or cloud
// metadata (DNS rebinding included: the checked address is the one dialled).
// The list's Reserved endpoints (the worker's own) are refused by name and
// by address, whatever the list's entries say.
// The renderer's egress proxy and callback delivery both dial through it.
type Dialer struct {
	List allowlist.List
	// Lookup resolves a name; nil: the system resolver.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial connects to a checked "ip:port"; nil: a net.Dialer with
	// DefaultDialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (d Dialer) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if d.Lookup != nil {
		return d.Lookup(ctx, host)
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

func (d Dialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	if d.Dial != nil {
		return d.Dial(ctx, "tcp", addr)
	}
	nd := &net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second}
	return nd.DialContext(ctx, "tcp", addr)
}

// CheckHost is the list's check of a host and port before any resolution.
func (d Dialer) CheckHost(host, port string) error {
	if host == "" {
		return &Refusal{"empty host"}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return &Refusal{fmt.Sprintf("bad port %q", port)}
	}
	if why := d.List.Reserved().HostRefusal(host, port); why != "" {
		return &Refusal{why}
	}
	if !d.List.AllowsHost(host, port) {
		canon, _, _ := allowlist.CanonicalHost(host)
		return &Refusal{net.JoinHostPort(canon, port) + " is not on the allowlist"}
	}
	return nil
}

// Resolve checks host and port and returns the addresses that may be dialled
// for them: an IP literal (any spelling) as itself, a name resolved once
// (bounded by DefaultResolveTimeout), keeping only the addresses AllowsAddr
// accepts. Refusals are *Refusal.
func (d Dialer) Resolve(ctx context.Context, host, port string) ([]netip.AddrPort, error) {
	if err := d.CheckHost(host, port); err != nil {
		return nil, err
	}
	n, _ := strconv.Atoi(port)
	canon, addr, isIP := allowlist.CanonicalHost(host)
	if isIP {
		// AllowsHost already required an entry naming it (or a public address).
		if why := d.List.AddrRefusal(addr, port); why != "" {
			return nil, &Refusal{why}
		}
		if why := d.List.Reserved().AddrRefusal(ctx, d.Lookup, addr, port); why != "" {
			return nil, &Refusal{why}
		}
		return []netip.AddrPort{netip.AddrPortFrom(addr, uint16(n))}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, DefaultResolveTimeout)
	defer cancel()
	addrs, err := d.lookup(rctx, canon)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", canon, err)
	}
	var ok []netip.AddrPort
	var refused []string
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		why := d.List.AddrRefusal(a, port)
		if why == "" {
			why = d.List.Reserved().AddrRefusal(ctx, d.Lookup, a, port)
		}
		if why == "" {
			ok = append(ok, netip.AddrPortFrom(a, uint16(n)))
		} else {
			refused = append(refused, why)
		}
	}
	if len(ok) == 0 {
		if len(refused) == 0 {
			return nil, fmt.Errorf("resolving %s: no address", canon)
		}
		return nil, &Refusal{fmt.Sprintf("%s resolves only to addresses the allowlist does not name: %s", canon, strings.Join(refused, "; "))}
	}
	return ok, nil
}

// DialContext resolves and checks addr ("host:port") and dials the first
// allowed address that answers; it fits http.Transport.DialContext.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &Refusal{fmt.Sprintf("bad address %q", addr)}
	}
	targets, err := d.Resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, t := range targets {
		c, err := d.dial(ctx, t.String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}
