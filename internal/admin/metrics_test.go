package admin

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestMetrics_LabelValuesExistBeforeAnyEvent: every label value the code
// observes has its series at 0 from the start, so rate(), increase() and
// the alerts of deployments/prometheus work before the first event (a
// counter that appears at its first increment hides that increment).
func TestMetrics_LabelValuesExistBeforeAnyEvent(t *testing.T) {
	srv := httptest.NewServer(Handler(Config{Metrics: NewMetrics()}))
	t.Cleanup(srv.Close)
	_, body := get(t, srv, "/metrics")
	for _, want := range []string{
		`pdfexport_exports_total{outcome="rendered"} 0`, `pdfexport_exports_total{outcome="reused"} 0`, `pdfexport_exports_total{outcome="failed"} 0`,
		`pdfexport_export_seconds_count{outcome="failed"} 0`,
		`pdfexport_renders_total{result="ok"} 0`, `pdfexport_renders_total{result="error"} 0`, `pdfexport_renders_total{result="timeout"} 0`,
		`pdfexport_render_seconds_count 0`,
		`pdfexport_lock_acquire_total{result="acquired"} 0`, `pdfexport_lock_acquire_total{result="contended"} 0`, `pdfexport_lock_acquire_total{result="fail_open"} 0`,
		`pdfexport_lock_wait_seconds_count 0`, `pdfexport_lock_lost_total 0`,
		`pdfexport_storage_bytes_total{op="put"} 0`, `pdfexport_browser_restarts_total 0`,
		`pdfexport_render_warnings_total{kind="resource"} 0`, `pdfexport_render_warnings_total{kind="blocked"} 0`, `pdfexport_render_warnings_total{kind="console"} 0`,
		`pdfexport_callbacks_total{outcome="delivered"} 0`, `pdfexport_callbacks_total{outcome="retry"} 0`, `pdfexport_callbacks_total{outcome="refused"} 0`,
		`pdfexport_queue_idle_polls_total 0`, `pdfexport_queue_wakeups_total{by="doorbell"} 0`, `pdfexport_queue_wakeups_total{by="timer"} 0`,
		"pdfexport_ready 1", // no checks: ready, as /readyz answers
	} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestMetrics_ReadinessGauge: each scrape runs the readiness checks and
// exports their result (pdfexport_ready, pdfexport_ready_check{check}), so an
// alert sees a worker that is not ready even where nothing probes /readyz;
// /readyz records its own evaluation too.
func TestMetrics_ReadinessGauge(t *testing.T) {
	var chromiumDown atomic.Bool
	chromiumDown.Store(true)
	m := NewMetrics()
	srv := httptest.NewServer(Handler(Config{Metrics: m, Checks: map[string]Check{
		"redis": func(context.Context) error { return nil },
		"chromium": func(context.Context) error {
			if chromiumDown.Load() {
				return errors.New("browser exited")
			}
			return nil
		},
	}}))
	t.Cleanup(srv.Close)
	expect := func(wants ...string) {
		t.Helper()
		_, body := get(t, srv, "/metrics")
		for _, want := range wants {
			if !strings.Contains(body, "\n"+want+"\n") {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
	expect("pdfexport_ready 0", `pdfexport_ready_check{check="chromium"} 0`, `pdfexport_ready_check{check="redis"} 1`)
	chromiumDown.Store(false)
	expect("pdfexport_ready 1", `pdfexport_ready_check{check="chromium"} 1`, `pdfexport_ready_check{check="redis"} 1`)

	chromiumDown.Store(true)
	if code, _ := get(t, srv, "/readyz"); code != 503 {
		t.Fatalf("readyz = %d, want 503", code)
	}
	if got := gaugeValue(t, m, "pdfexport_ready"); got != 0 {
		t.Errorf("pdfexport_ready after a failing /readyz = %v, want 0", got)
	}
}

func gaugeValue(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series %s", name)
	return 0
}
