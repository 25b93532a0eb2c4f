package allowlist

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParse_RejectsMalformedEntries(t *testing.T) {
	for _, bad := range []string{"https://a.com", "a.com/path", "user@a.com", "a.com:0", "a.com:99999", "*", "a.*.com", "bad host", "*."} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted a malformed entry", bad)
		}
	}
}

func TestAllowsHost(t *testing.T) {
	l := MustParse("docs.example.com, *.example.org, api.example.net:8443, 127.0.0.1:8080, [::1]:9000, 93.184.216.34")
	tests := []struct {
		host, port string
		want       bool
	}{
		{"docs.example.com", "443", true},
		{"DOCS.Example.COM.", "80", true},
		{"evil-docs.example.com", "443", false},
		{"docs.example.com.evil.net", "443", false},
		{"a.example.org", "443", true},
		{"a.b.example.org", "80", true},
		{"example.org", "443", false},
		{"api.example.net", "8443", true},
		{"api.example.net", "443", false},
		{"127.0.0.1", "8080", true},
		{"127.0.0.1", "8081", false},
		{"2130706433", "8080", true}, // decimal form of the listed address
		{"0x7f000001", "80", false},
		{"127.1", "8080", true},
		{"::1", "9000", true},
		{"::ffff:127.0.0.1", "8080", true},
		{"localhost", "8080", false},
		{"10.0.0.1", "80", false},
		{"169.254.169.254", "80", false},
		{"93.184.216.34", "443", true},
		{"93.184.216.35", "443", false},
	}
	for _, tt := range tests {
		if got := l.AllowsHost(tt.host, tt.port); got != tt.want {
			t.Errorf("AllowsHost(%q, %q) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestAllowsAddr_SpecialAddressesOnlyWhenNamed(t *testing.T) {
	l := MustParse("docs.example.com, 127.0.0.1:8080")
	tests := []struct {
		addr, port string
		want       bool
	}{
		{"93.184.216.34", "443", true},
		{"127.0.0.1", "8080", true},
		{"127.0.0.1", "6379", false},
		{"127.0.0.2", "8080", false},
		{"10.1.2.3", "443", false},
		{"172.16.0.1", "443", false},
		{"192.168.1.1", "443", false},
		{"169.254.169.254", "80", false},
		{"100.64.0.1", "80", false},
		{"0.0.0.0", "80", false},
		{"::", "80", false},
		{"::1", "80", false},
		{"fe80::1", "80", false},
		{"fd00::1", "80", false},
		{"::ffff:10.0.0.1", "80", false},
	}
	for _, tt := range tests {
		if got := l.AllowsAddr(netip.MustParseAddr(tt.addr), tt.port); got != tt.want {
			t.Errorf("AllowsAddr(%s, %s) = %v, want %v", tt.addr, tt.port, got, tt.want)
		}
	}
}

func TestCanonicalHost_NumericForms(t *testing.T) {
	for in, want := range map[string]string{
		"2130706433":       "127.0.0.1",
		"0177.0.0.1":       "127.0.0.1",
		"0x7f.0.0.1":       "127.0.0.1",
		"0x7f.1":           "127.0.0.1",
		"127.1":            "127.0.0.1",
		"[::ffff:7f00:1]":  "127.0.0.1",
		"017700000001":     "127.0.0.1",
		"169.254.169.254.": "169.254.169.254",
	} {
		got, _, isIP := CanonicalHost(in)
		if !isIP || got != want {
			t.Errorf("CanonicalHost(%q) = %q (ip %v), want %q", in, got, isIP, want)
		}
	}
	if _, _, isIP := CanonicalHost("1.2.3.4.5"); isIP {
		t.Error("five parts parsed as an IP")
	}
}

func TestCheck_ExplainsRefusal(t *testing.T) {
	err := MustParse("docs.example.com").Check("127.0.0.1", "80")
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("Check = %v, want ErrForbidden", err)
	}
}
