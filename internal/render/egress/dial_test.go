package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

// TestDialer_ConnectsOnlyWhereTheListAllows: a real listener on loopback is
// reached when the list names its address exactly, and refused, before any
// connection, when a listed name resolves to it or the host is off the list.
func TestDialer_ConnectsOnlyWhereTheListAllows(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	rebind := func(ctx context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil // every name points at loopback
	}
	tests := []struct {
		name, list, target string
		want               string // "" connects; else a word of the refusal
	}{
		{"address named exactly", addr, addr, ""},
		{"name resolving to loopback", "*.example.test", "hooks.example.test:" + port, "resolves only to addresses the allowlist does not name"},
		{"off the list", "api.example.com", addr, "not on the allowlist"},
		{"loopback, other port named", "127.0.0.1:1", addr, "not on the allowlist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Dialer{List: allowlist.MustParse(tt.list), Lookup: rebind}
			c, err := d.DialContext(context.Background(), "tcp", tt.target)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				c.Close()
				<-accepted
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a refusal saying %q", err, tt.want)
			}
			select {
			case <-accepted:
				t.Fatal("the refused target was connected to")
			default:
			}
		})
	}
}
