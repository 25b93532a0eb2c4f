package egress

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

// TestReserved_OwnEndpointsWhateverTheList: the allowlist names the
// worker's own endpoints, in every spelling a page could use, and the
// dialer (the egress proxy's and callback delivery's) and the list's host
// check (the tab guard's, URL validation's) still refuse them, naming the
// setting they belong to.
func TestReserved_OwnEndpointsWhateverTheList(t *testing.T) {
	own := allowlist.NewReserved()
	for _, ep := range []struct{ what, hostport string }{
		{"ADMIN_ADDR", "127.0.0.1:9090"},
		{"REDIS_URL", "localhost:6379"},
		{"API_ADDR", ":8080"}, // every local address
		{"S3_ENDPOINT", "minio.internal:9000"},
	} {
		if _, err := own.Add(ep.what, ep.hostport); err != nil {
			t.Fatal(err)
		}
	}
	release, err := own.Add("egress proxy", "127.0.0.1:41234")
	if err != nil {
		t.Fatal(err)
	}
	list := allowlist.MustParse("127.0.0.1:9090,127.0.0.2:9090,0.0.0.0:9090,localhost:9090,[::1]:9090," +
		"127.0.0.1:6379,127.0.0.1:8080,10.9.9.9:8080,minio.internal:9000,alias.internal:9000,10.0.0.5:9000," +
		"127.0.0.1:9091,127.0.0.1:41234,docs.example.com").WithReserved(own)
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "minio.internal", "alias.internal":
			return []netip.Addr{netip.MustParseAddr("10.0.0.5")}, nil
		case "docs.example.com":
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return nil, errors.New("no such host")
	}
	d := Dialer{List: list, Lookup: lookup}
	for _, tc := range []struct {
		host, port string
		what       string // "" allowed
	}{
		{"127.0.0.1", "9090", "ADMIN_ADDR"},
		{"2130706433", "9090", "ADMIN_ADDR"}, // decimal spelling
		{"127.0.0.2", "9090", "ADMIN_ADDR"},  // another loopback address reaches a 0.0.0.0 listener
		{"0.0.0.0", "9090", "ADMIN_ADDR"},    // dials this host
		{"localhost", "9090", "ADMIN_ADDR"},
		{"::1", "9090", "ADMIN_ADDR"},
		{"127.0.0.1", "6379", "REDIS_URL"}, // named localhost:6379
		{"127.0.0.1", "8080", "API_ADDR"},
		{"minio.internal", "9000", "S3_ENDPOINT"}, // by name
		{"alias.internal", "9000", "S3_ENDPOINT"}, // by the address the name resolves to
		{"10.0.0.5", "9000", "S3_ENDPOINT"},       // likewise
		{"127.0.0.1", "41234", "egress proxy"},
		{"127.0.0.1", "9091", ""},
		{"10.9.9.9", "8080", ""}, // not a local address: another host's port 8080
		{"docs.example.com", "443", ""},
	} {
		_, err := d.Resolve(context.Background(), tc.host, tc.port)
		checkErr := list.Check(tc.host, tc.port)
		if tc.what == "" {
			if err != nil {
				t.Errorf("Resolve(%s, %s) = %v, want allowed", tc.host, tc.port, err)
			}
			continue
		}
		var rf *Refusal
		if !errors.As(err, &rf) || !strings.Contains(rf.Reason, "the worker's own "+tc.what) {
			t.Errorf("Resolve(%s, %s) = %v, want a refusal naming %s", tc.host, tc.port, err, tc.what)
		}
		// The host-level check sees what it can without resolving: every
		// address spelling, localhost, and reserved names, not the
		// addresses a reserved name resolves to.
		hostLevel := tc.host != "alias.internal" && tc.host != "10.0.0.5"
		if hostLevel && (!errors.Is(checkErr, allowlist.ErrForbidden) || !strings.Contains(checkErr.Error(), tc.what)) {
			t.Errorf("Check(%s, %s) = %v, want a refusal naming %s", tc.host, tc.port, checkErr, tc.what)
		}
		if hostLevel && list.AllowsHost(tc.host, tc.port) {
			t.Errorf("AllowsHost(%s, %s) = true", tc.host, tc.port)
		}
	}
	release()
	if _, err := d.Resolve(context.Background(), "127.0.0.1", "41234"); err != nil {
		t.Errorf("a released endpoint is still refused: %v", err)
	}
}

// TestParse_SpecialAddressNeedsAPort: an entry naming a special-purpose
// address without a port would open every port on it, the worker's own
// among them; it is refused naming the entry. Public addresses and names
// keep port-less entries.
func TestParse_SpecialAddressNeedsAPort(t *testing.T) {
	for _, tc := range []struct {
		list string
		bad  string // the entry the error must name; "" valid
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"docs.example.com, 10.1.2.3", "10.1.2.3"},
		{"[::1]", "[::1]"},
		{"169.254.169.254", "169.254.169.254"},
		{"2130706433", "2130706433"},
		{"192.168.1.10", "192.168.1.10"},
		{"127.0.0.1:8080, [::1]:9000, 10.1.2.3:443", ""},
		{"93.184.216.34, docs.example.com, localhost, *.example.org", ""},
	} {
		_, err := allowlist.Parse(tc.list)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("allowlist.Parse(%q) = %v, want valid", tc.list, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), `"`+tc.bad+`"`) || !strings.Contains(err.Error(), "explicit port")):
			t.Errorf("allowlist.Parse(%q) = %v, want an error naming %q and asking for a port", tc.list, err, tc.bad)
		}
	}
}
