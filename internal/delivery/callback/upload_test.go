package callback

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/pdfexport/pdfexport/internal/render/allowlist"
)

// TestSend_UploadUnderTheCallbackRules: an upload reaches an allowed
// receiver with its method, headers and body, unsigned; a host off the
// list, a name resolving to loopback, a method other than POST, PUT or
// PATCH, a redirect and a non-2xx answer are errors, the refusals
// matching ErrRefused.
func TestSend_UploadUnderTheCallbackRules(t *testing.T) {
	r := newReceiver(t, http.StatusOK, http.StatusFound, http.StatusInternalServerError)
	port := r.srv.URL[strings.LastIndex(r.srv.URL, ":")+1:]
	d := deliverer(Config{Keys: [][]byte{}, Allowed: allowlist.MustParse(r.host())})
	t.Cleanup(d.Close)
	ctx := context.Background()
	toLoopback := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	up := func(url, method string) Upload {
		return Upload{URL: url, Method: method, Header: http.Header{"Content-Type": {"application/pdf"}, "X-Foo": {"bar"}},
			Body: strings.NewReader("%PDF-1.7 body"), Size: 13}
	}
	if err := d.Send(ctx, up(r.srv.URL+"/hook", http.MethodPut)); err != nil {
		t.Fatal(err)
	}
	got := r.got()
	if len(got) != 1 || string(got[0].body) != "%PDF-1.7 body" || got[0].header.Get("X-Foo") != "bar" || got[0].signature != "" {
		t.Fatalf("received %+v", got)
	}
	for _, tc := range []struct {
		name    string
		d       *Deliverer
		u       Upload
		refused bool
	}{
		{"redirect not followed", d, up(r.srv.URL+"/hook", http.MethodPost), false},
		{"non-2xx", d, up(r.srv.URL+"/hook", http.MethodPost), false},
		{"host off the list", deliverer(Config{Allowed: allowlist.MustParse("hooks.example.com")}), up(r.srv.URL+"/hook", http.MethodPost), true},
		{"name resolving to loopback", deliverer(Config{Allowed: allowlist.MustParse("*.example.test"), Lookup: toLoopback}), up("http://hooks.example.test:"+port+"/h", http.MethodPost), true},
		{"method", d, up(r.srv.URL+"/hook", http.MethodDelete), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Send(ctx, tc.u)
			if err == nil || errors.Is(err, ErrRefused) != tc.refused {
				t.Errorf("err %v, refused %v", err, tc.refused)
			}
		})
	}
	if n := len(r.got()); n != 3 {
		t.Errorf("%d requests reached the receiver, want 3 (the refusals none)", n)
	}
}
