package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check reports whether one dependency is usable.
type Check func(ctx context.Context) error

// Config of the admin handler.
type Config struct {
	Metrics      *Metrics
	Checks       map[string]Check // name → check, run by /readyz
	CheckTimeout time.Duration    // per check, default 2s
	Version      string
	Dashboard    *DashboardConfig // nil: no dashboard
}

// Handler returns the admin mux: /healthz, /readyz, /metrics. Both /readyz
// and /metrics run the readiness checks; with Metrics, each run sets
// pdfexport_ready and pdfexport_ready_check.
func Handler(cfg Config) http.Handler {
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = 2 * time.Second
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": cfg.Version})
	})
	names := make([]string, 0, len(cfg.Checks))
	for name := range cfg.Checks {
		names = append(names, name)
	}
	sort.Strings(names)
	// evaluate runs the checks and, with metrics, records the result as
	// pdfexport_ready and pdfexport_ready_check{check}.
	evaluate := func(ctx context.Context) map[string]string {
		failures := runChecks(ctx, cfg.Checks, cfg.CheckTimeout)
		if cfg.Metrics != nil {
			cfg.Metrics.Readiness(names, failures)
		}
		return failures
	}
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		failures := evaluate(r.Context())
		if len(failures) > 0 {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "failing": failures})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
	})
	if cfg.Metrics != nil {
		// Each scrape evaluates readiness first (the checks are cheap and
		// bounded by CheckTimeout), so pdfexport_ready is current even where
		// nothing probes /readyz (compose, bare processes).
		metrics := promhttp.HandlerFor(cfg.Metrics.Registry, promhttp.HandlerOpts{})
		mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			evaluate(r.Context())
			metrics.ServeHTTP(w, r)
		}))
	}
	if cfg.Dashboard != nil {
		dash := newDashboard(*cfg.Dashboard)
		mux.Handle(dashboardPath+"/", dash)
		mux.Handle(dashboardPath, http.RedirectHandler(dashboardPath+"/", http.StatusMovedPermanently))
	}
	return mux
}

func runChecks(ctx context.Context, checks map[string]Check, timeout time.Duration) map[string]string {
	var mu sync.Mutex
	var wg sync.WaitGroup
	failures := map[string]string{}
	for name, check := range checks { // all at once: order does not matter
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := check(cctx); err != nil {
				mu.Lock()
				failures[name] = err.Error()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failures
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
