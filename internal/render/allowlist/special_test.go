package allowlist

import (
	"net"
	"net/netip"
	"strings"
	"testing"
)

// TestSpecial_EveryRegistryRow: one case per row of the special-purpose
// table: its example lies in its prefix, is refused unless named, and the
// reason names the row.
func TestSpecial_EveryRegistryRow(t *testing.T) {
	l := MustParse("*.example.test")
	for _, r := range specialRanges {
		t.Run(r.prefix.String(), func(t *testing.T) {
			a := netip.MustParseAddr(r.example)
			if !r.prefix.Contains(a) {
				t.Fatalf("example %s is not in %s", a, r.prefix)
			}
			want := r.name + " " + r.prefix.String()
			if r.name == "IPv4-mapped" { // judged as the IPv4 address it maps
				want = "loopback 127.0.0.0/8"
			}
			reason, ok := Special(a)
			if !ok || !strings.Contains(reason, want) {
				t.Fatalf("Special(%s) = %q, %v; want %q", a, reason, ok, want)
			}
			if l.AllowsAddr(a, "443") {
				t.Errorf("AllowsAddr(%s) = true behind *.example.test", a)
			}
			if why := l.AddrRefusal(a, "443"); !strings.Contains(why, "blocked") || !strings.Contains(why, "special-purpose address") || !strings.Contains(why, want) {
				t.Errorf("AddrRefusal(%s) = %q: does not name the rule", a, why)
			}
			if !MustParse(net.JoinHostPort(r.example, "443")).AllowsAddr(a, "443") {
				t.Errorf("an entry naming %s exactly does not allow it", a)
			}
		})
	}
}

func TestSpecial_PublicAddressesAreOrdinary(t *testing.T) {
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "1.1.1.1", "198.20.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450:4001::1", "2001:4860::8888", "::ffff:8.8.8.8"} {
		if reason, ok := Special(netip.MustParseAddr(s)); ok {
			t.Errorf("Special(%s) = %q, want an ordinary address", s, reason)
		}
	}
}

// TestSpecial_EmbeddedIPv4IsJudgedToo: the ranges the review reproduced
// behind *.example.test, and the IPv4 address they carry.
func TestSpecial_EmbeddedIPv4IsJudgedToo(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"64:ff9b::7f00:1", "embedding 127.0.0.1: loopback"},
		{"2002:7f00:1::1", "embedding 127.0.0.1: loopback"},
		{"2002:a9fe:a9fe::1", "embedding 169.254.169.254: link-local"},
		{"::7f00:1", "embedding 127.0.0.1: loopback"},
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", "embedding 10.0.0.1: private-use"}, // Teredo: client bits inverted
		{"::ffff:127.0.0.1", "loopback 127.0.0.0/8"},
		{"64:ff9b::808:808", "embedding 8.8.8.8"},
	} {
		reason, ok := Special(netip.MustParseAddr(tc.addr))
		if !ok || !strings.Contains(reason, tc.want) {
			t.Errorf("Special(%s) = %q, %v; want it to say %q", tc.addr, reason, ok, tc.want)
		}
	}
}
