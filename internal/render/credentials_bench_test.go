package render

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pdfexport/pdfexport/bench/peer"
	"github.com/pdfexport/pdfexport/internal/render/allowlist"
	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/render/sourceauth"
	"github.com/pdfexport/pdfexport/internal/spec"
)

// BenchmarkSourceCredentials measures what source credentials cost: one
// render of the same HTTPS page (a document with 12 images and a style
// sheet), on the headless shell,
//
//   - intercepted: ours, from a host with operator credentials, whose tunnel
//     the egress proxy opens (TLS with the browser, credentials added, TLS
//     to the server);
//   - opaque: ours, from an identical server without credentials, whose
//     tunnel stays opaque (the interception's own cost);
//   - peer: the baseline a user would pick instead, the peer's URL route
//     with extra HTTP headers (a tab in the shared context,
//     Network.setExtraHTTPHeaders: every request of the tab gets them,
//     whatever its host, and out-of-process frames' requests none).
//
// Interleaved in each iteration; CPU is the browser's process tree plus
// this process (where our proxy runs and the peer's client). It prints
// figures and asserts nothing.
func BenchmarkSourceCredentials(b *testing.B) {
	shell, err := chromium.HeadlessShell()
	if err != nil {
		b.Skip(err)
	}
	certs := newTestTLS(b)
	site := func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/page":
			var imgs strings.Builder
			for i := range 12 {
				fmt.Fprintf(&imgs, `<img src="/img/%d.svg" width="80" height="80">`, i)
			}
			fmt.Fprintf(w, `<!doctype html><link rel="stylesheet" href="/style.css"><h1>Private manual</h1>%s<p>%s</p>`,
				imgs.String(), strings.Repeat("Lorem ipsum dolor sit amet. ", 400))
		case r.URL.Path == "/style.css":
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, "body { font-family: sans-serif } h1 { color: #234 }")
		case strings.HasPrefix(r.URL.Path, "/img/"):
			w.Header().Set("Content-Type", "image/svg+xml")
			fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="80" height="80"><circle cx="40" cy="40" r="30" fill="#48c"/></svg>`)
		default:
			http.NotFound(w, r)
		}
	}
	start := func() *httptest.Server {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(site))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{certs.cert}}
		srv.StartTLS()
		b.Cleanup(srv.Close)
		return srv
	}
	private, public := start(), start()
	_, pp, _ := net.SplitHostPort(private.Listener.Addr().String())
	_, op, _ := net.SplitHostPort(public.Listener.Addr().String())
	rules, err := sourceauth.Parse([]byte(`{"rules": [{"hosts": "127.0.0.1:`+pp+`", "headers": {"Authorization": "Bearer t"}, "cookies": [{"name": "sid", "value": "s"}]}]}`), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(Config{ChromiumPath: shell, AllowedHosts: allowlist.MustParse("127.0.0.1:" + pp + ",127.0.0.1:" + op),
		SourceAuth: rules, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	r.hooks.proxy.UpstreamRoots, r.hooks.trustSPKI = certs.roots, []string{certs.spki}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close() })
	bare, err := peer.Start(ctx, shell, chromedp.Flag("ignore-certificate-errors-spki-list", certs.spki))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(bare.Close)
	variants := []struct{ name, url string }{
		{"opaque", public.URL + "/page"},
		{"intercepted", private.URL + "/page"},
		{"peer", private.URL + "/page"},
	}
	type sample struct{ cpu, self, wall []float64 }
	samples := map[string]*sample{}
	peerHeaders := map[string]string{"Authorization": "Bearer t", "Cookie": "sid=s"}
	renderOnce := func(name, u string) (cpu, self, wall float64) {
		pid := r.current().pid
		if name == "peer" {
			pid = bare.PID()
		}
		c0, s0, t0 := cpuSeconds(pid), selfCPU(), time.Now()
		if name == "peer" {
			_, err = bare.PrintURL(context.Background(), u, peerHeaders, PrintParams(spec.Options{}.Settings()), io.Discard)
		} else {
			_, err = r.Render(context.Background(), Source{URL: u}, spec.Options{}.Settings(), discardSink)
		}
		if err != nil {
			b.Fatal(err)
		}
		return cpuSeconds(pid) - c0 + selfCPU() - s0, selfCPU() - s0, time.Since(t0).Seconds()
	}
	for _, v := range variants { // warm up every path
		renderOnce(v.name, v.url)
		samples[v.name] = &sample{}
	}
	for b.Loop() {
		for _, v := range variants {
			c, self, w := renderOnce(v.name, v.url)
			samples[v.name].cpu = append(samples[v.name].cpu, c)
			samples[v.name].self = append(samples[v.name].self, self)
			samples[v.name].wall = append(samples[v.name].wall, w)
		}
	}
	for _, v := range variants {
		b.ReportMetric(median(samples[v.name].cpu), v.name+"-cpu-s")
		b.ReportMetric(median(samples[v.name].self), v.name+"-of-which-go-cpu-s")
		b.ReportMetric(median(samples[v.name].wall)*1000, v.name+"-ms")
	}
	b.ReportMetric(median(samples["intercepted"].cpu)/median(samples["peer"].cpu), "cpu-intercepted/peer")
	b.ReportMetric(median(samples["intercepted"].wall)/median(samples["peer"].wall), "wall-intercepted/peer")
	b.ReportMetric(median(samples["intercepted"].cpu)/median(samples["opaque"].cpu), "cpu-intercepted/opaque")
	b.ReportMetric(median(samples["intercepted"].wall)/median(samples["opaque"].wall), "wall-intercepted/opaque")
}
