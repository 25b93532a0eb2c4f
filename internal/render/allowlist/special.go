package allowlist

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// specialRange is one row of the IANA IPv4 and IPv6 Special-Purpose Address
// Registries (iana-ipv4-special-registry, iana-ipv6-special-registry),
// plus the multicast blocks and two deprecated IPv6 blocks the registries
// no longer list but that still reach local networks. Example is an address
// of the row that no narrower row covers; the tests check every row with it.
type specialRange struct {
	prefix  netip.Prefix
	name    string
	ref     string
	example string
}

func sr(prefix, name, ref, example string) specialRange {
	return specialRange{netip.MustParsePrefix(prefix), name, ref, example}
}

// specialRanges: none of these is a public web server's address. Every row
// is refused unless an ALLOWED_HOSTS entry names the exact address.
var specialRanges = []specialRange{
	sr("0.0.0.0/8", "this network", "RFC 791", "0.1.2.3"),
	sr("10.0.0.0/8", "private-use", "RFC 1918", "10.1.2.3"),
	sr("100.64.0.0/10", "shared address space (carrier-grade NAT)", "RFC 6598", "100.64.0.1"),
	sr("127.0.0.0/8", "loopback", "RFC 1122", "127.0.0.1"),
	sr("169.254.0.0/16", "link-local", "RFC 3927", "169.254.169.254"),
	sr("172.16.0.0/12", "private-use", "RFC 1918", "172.31.255.1"),
	sr("192.0.0.0/24", "IETF protocol assignments", "RFC 6890", "192.0.0.9"),
	sr("192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737", "192.0.2.1"),
	sr("192.31.196.0/24", "AS112-v4", "RFC 7535", "192.31.196.1"),
	sr("192.52.193.0/24", "AMT", "RFC 7450", "192.52.193.1"),
	sr("192.88.99.0/24", "6to4 relay anycast (deprecated)", "RFC 7526", "192.88.99.1"),
	sr("192.168.0.0/16", "private-use", "RFC 1918", "192.168.1.1"),
	sr("192.175.48.0/24", "direct delegation AS112 service", "RFC 7534", "192.175.48.1"),
	sr("198.18.0.0/15", "benchmarking", "RFC 2544", "198.19.0.1"),
	sr("198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737", "198.51.100.1"),
	sr("203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737", "203.0.113.1"),
	sr("224.0.0.0/4", "multicast", "RFC 5771", "239.255.255.250"),
	sr("240.0.0.0/4", "reserved", "RFC 1112", "240.0.0.1"),
	sr("255.255.255.255/32", "limited broadcast", "RFC 8190", "255.255.255.255"),

	sr("::/128", "unspecified", "RFC 4291", "::"),
	sr("::1/128", "loopback", "RFC 4291", "::1"),
	sr("::/96", "IPv4-compatible (deprecated)", "RFC 4291", "::808:808"),
	sr("::ffff:0:0/96", "IPv4-mapped", "RFC 4291", "::ffff:127.0.0.1"), // judged as its IPv4 address
	sr("64:ff9b::/96", "IPv4/IPv6 translation (NAT64)", "RFC 6052", "64:ff9b::808:808"),
	sr("64:ff9b:1::/48", "local-use IPv4/IPv6 translation", "RFC 8215", "64:ff9b:1::1"),
	sr("100::/64", "discard-only", "RFC 6666", "100::1"),
	sr("100:0:0:1::/64", "dummy IPv6 prefix", "RFC 9780", "100:0:0:1::1"),
	sr("2001::/23", "IETF protocol assignments", "RFC 2928", "2001:100::1"),
	sr("2001::/32", "Teredo", "RFC 4380", "2001:0:4136:e378:8000:63bf:3fff:fdd2"),
	sr("2001:2::/48", "benchmarking", "RFC 5180", "2001:2::1"),
	sr("2001:3::/32", "AMT", "RFC 7450", "2001:3::1"),
	sr("2001:4:112::/48", "AS112-v6", "RFC 7535", "2001:4:112::1"),
	sr("2001:10::/28", "ORCHID (deprecated)", "RFC 4843", "2001:10::1"),
	sr("2001:20::/28", "ORCHIDv2", "RFC 7343", "2001:20::1"),
	sr("2001:30::/28", "drone remote ID", "RFC 9374", "2001:30::1"),
	sr("2001:db8::/32", "documentation", "RFC 3849", "2001:db8::1"),
	sr("2002::/16", "6to4", "RFC 3056", "2002:808:808::1"),
	sr("2620:4f:8000::/48", "direct delegation AS112 service", "RFC 7534", "2620:4f:8000::1"),
	sr("3fff::/20", "documentation", "RFC 9637", "3fff::1"),
	sr("5f00::/16", "segment routing (SRv6) SIDs", "RFC 9602", "5f00::1"),
	sr("fc00::/7", "unique-local", "RFC 4193", "fd00::1"),
	sr("fe80::/10", "link-local", "RFC 4291", "fe80::1"),
	sr("fec0::/10", "site-local (deprecated)", "RFC 3879", "fec0::1"),
	sr("ff00::/8", "multicast", "RFC 4291", "ff02::1"),
}

// specialRow returns the narrowest row of specialRanges holding a.
func specialRow(a netip.Addr) (specialRange, bool) {
	var best specialRange
	found := false
	for _, r := range specialRanges {
		if r.prefix.Contains(a) && (!found || r.prefix.Bits() > best.prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}

// embeddedIPv4 returns the IPv4 address an IPv6 address carries by
// construction: IPv4-compatible and NAT64 (the last 32 bits), 6to4 (bits
// 16–47) and Teredo (the client, the last 32 bits inverted).
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() || a.Is4In6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	last := func() netip.Addr { return netip.AddrFrom4([4]byte(b[12:16])) }
	switch {
	case netip.MustParsePrefix("::/96").Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		return last(), true
	case netip.MustParsePrefix("64:ff9b::/96").Contains(a):
		return last(), true
	case netip.MustParsePrefix("2002::/16").Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	case netip.MustParsePrefix("2001::/32").Contains(a):
		var v [4]byte
		binary.BigEndian.PutUint32(v[:], ^binary.BigEndian.Uint32(b[12:16]))
		return netip.AddrFrom4(v), true
	}
	return netip.Addr{}, false
}

// Special says why an address is not an ordinary public unicast address: the
// special-purpose row it belongs to, and for an address that embeds an IPv4
// address, what that address is. ok is false for an ordinary address. An
// IPv4-mapped IPv6 address is judged as its IPv4 address.
func Special(a netip.Addr) (reason string, ok bool) {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return "invalid address", true
	}
	row, ok := specialRow(a)
	if !ok {
		return "", false
	}
	reason = fmt.Sprintf("%s %s (%s)", row.name, row.prefix, row.ref)
	if v4, embeds := embeddedIPv4(a); embeds {
		if inner, special := Special(v4); special {
			reason += fmt.Sprintf(", embedding %s: %s", v4, inner)
		} else {
			reason += fmt.Sprintf(", embedding %s", v4)
		}
	}
	return reason, true
}

// IsSpecial reports whether an address is in the special-purpose registries
// (loopback, private, link-local, translation, documentation, reserved, …)
// or multicast: anything but an ordinary public unicast address.
func IsSpecial(a netip.Addr) bool {
	_, ok := Special(a)
	return ok
}
