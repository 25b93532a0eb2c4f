package gotenberg

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsPath is Gotenberg's --prometheus-metrics-path default, under the
// root path.
const metricsPath = "prometheus/metrics"

// metricsNamespace is Gotenberg's --prometheus-namespace default.
const metricsNamespace = "gotenberg"

// newMetrics serves Gotenberg's module gauges under its names, on a
// registry of their own as Gotenberg's (no process or Go collectors: the
// workers' own metrics are on their admin address). Chromium runs in the
// workers, which restart it themselves and count that there; a
// Chromium-only Gotenberg has no LibreOffice to queue for or restart.
func newMetrics(pending func() float64) http.Handler {
	if pending == nil {
		pending = func() float64 { return 0 }
	}
	zero := func() float64 { return 0 }
	reg := prometheus.NewRegistry()
	for _, g := range []struct {
		name, help string
		read       func() float64
	}{
		{"chromium_requests_queue_size", "Current number of Chromium conversion requests waiting to be treated.", pending},
		{"chromium_restarts_count", "Current number of Chromium restarts.", zero},
		{"libreoffice_requests_queue_size", "Current number of LibreOffice conversion requests waiting to be treated.", zero},
		{"libreoffice_restarts_count", "Current number of LibreOffice restarts.", zero},
	} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: g.name, Help: g.help}, g.read))
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
