package assemble

import (
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// StartSite serves h on a loopback port and starts a renderer that may
// load it, both stopped with the test, for the tests that assemble real
// prints (this package's and assemble_test's). base is the site's root,
// ending in "/".
func StartSite(t testing.TB, h http.Handler) (r *render.Renderer, base string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r, err = render.New(render.Config{ChromiumPath: testsupport.ChromiumPath(t), Timeout: time.Minute,
		AllowedHosts: allowlist.MustParse(ln.Addr().String()), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r, "http://" + ln.Addr().String() + "/"
}
