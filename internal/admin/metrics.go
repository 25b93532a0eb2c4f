package admin

import (
	"time"

	"github.com/hibiken/asynq"
	"github.com/hibiken/asynq/x/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pdfexport/pdfexport/internal/queue/doorbell"
)

// WithQueueMetrics adds asynq's queue collector (asynq_queue_size,
// asynq_queue_latency_seconds, asynq_tasks_enqueued_total, …), which reads
// queue state from Redis at each scrape.
func (m *Metrics) WithQueueMetrics(inspector *asynq.Inspector) *Metrics {
	m.Registry.MustRegister(metrics.NewQueueMetricsCollector(inspector))
	return m
}

// Metrics are the pdfexport_* Prometheus metrics (docs/OPERATING.md). A Metrics is
// the Observer of the lock, tasks and render packages.
type Metrics struct {
	Registry        *prometheus.Registry
	exports         *prometheus.CounterVec
	exportSeconds   *prometheus.HistogramVec
	renders         *prometheus.CounterVec
	renderSeconds   prometheus.Histogram
	lockAcquire     *prometheus.CounterVec
	lockWait        prometheus.Histogram
	lockLost        prometheus.Counter
	storageBytes    *prometheus.CounterVec
	browserRestarts prometheus.Counter
	callbacks       *prometheus.CounterVec
	warnings        *prometheus.CounterVec
	ready           prometheus.Gauge
	readyChecks     *prometheus.GaugeVec
	renderWait      *prometheus.HistogramVec
	rendersInFlight *prometheus.GaugeVec
	idlePolls       prometheus.Counter
	wakeups         *prometheus.CounterVec
}

// Label values the code paths observe. NewMetrics creates every series with
// them at 0, so that rate(), increase() and the alerts in
// deployments/prometheus see a series from a worker's first scrape rather
// than only after the first event.
var (
	exportOutcomes  = []string{"rendered", "reused", "failed"}        // export.Observer.ExportDone
	renderResults   = []string{"ok", "error", "timeout"}              // render.Renderer.Render
	lockResults     = []string{"acquired", "contended", "fail_open"}  // lock.Observer.LockAcquire
	storageOps      = []string{"put"}                                 // export.Observer.StorageBytes
	warningKinds    = []string{"resource", "blocked", "console"}      // render.WarningObserver
	callbackOutcome = []string{"delivered", "retry", "refused"}       // callback.Observer
	wakeupCauses    = []string{doorbell.ByDoorbell, doorbell.ByTimer} // doorbell.Observer.Woken
)

// NewMetrics registers the metrics, plus Go and process collectors, on a
// fresh registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		exports: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdfexport_exports_total",
			Help: "Export tasks finished, by outcome (rendered, reused, failed)."}, []string{"outcome"}),
		exportSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pdfexport_export_seconds",
			Help: "Time from task start to result, by outcome.", Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12)}, []string{"outcome"}),
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdfexport_renders_total",
			Help: "Chromium renders, by result (ok, error, timeout)."}, []string{"result"}),
		renderSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pdfexport_render_seconds",
			Help: "Duration of a render, load to last byte stored.", Buckets: prometheus.ExponentialBuckets(0.1, 1.8, 12)}),
		lockAcquire: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdfexport_lock_acquire_total",
			Help: "Render gate entries, by result (acquired, contended, fail_open)."}, []string{"result"}),
		lockWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pdfexport_lock_wait_seconds",
			Help: "Time spent waiting at the render gate.", Buckets: prometheus.ExponentialBuckets(0.001, 3, 12)}),
		lockLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "pdfexport_lock_lost_total",
			Help: "Render leases lost before release (the render was abandoned)."}),
		storageBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdfexport_storage_bytes_total",
			Help: "Bytes written to or read from artifact storage, by op."}, []string{"op"}),
		browserRestarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "pdfexport_browser_restarts_total",
			Help: "Chromium restarts after a crash or recycling."}),
		warnings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdfexport_render_warnings_total",
			Help: "Warnings of renders, by kind (resource: a sub-resource failed or answered >= 400, blocked: refused by the allowlist or the egress guard, console: an uncaught exception or console.error)."}, []string{"kind"}),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdfexport_callbacks_total",
			Help: "Callback delivery attempts, by outcome (delivered, retry: the receiver refused or was unreachable, refused: not allowed, never retried)."}, []string{"outcome"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Name: "pdfexport_ready",
			Help: "1 when every readiness check (/readyz) passed at the last evaluation (each /readyz and each /metrics scrape), else 0."}),
		readyChecks: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pdfexport_ready_check",
			Help: "1 when the readiness check (redis, locks, storage, chromium) passed at the last evaluation, else 0."}, []string{"check"}),
		renderWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pdfexport_render_slot_wait_seconds",
			Help: "Time a render waited for a free tab of its lane (RENDER_CONCURRENCY), by the queue of its task.", Buckets: prometheus.ExponentialBuckets(0.001, 3, 12)}, []string{"queue"}),
		rendersInFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pdfexport_renders_in_flight",
			Help: "Renders in progress (waiting for a tab or rendering), by the queue of their task."}, []string{"queue"}),
		idlePolls: prometheus.NewCounter(prometheus.CounterOpts{Name: "pdfexport_queue_idle_polls_total",
			Help: "Polls of the queues that found no task (each is followed by a wait for the doorbell or TASK_CHECK_INTERVAL)."}),
		wakeups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pdfexport_queue_wakeups_total",
			Help: "Ends of an idle wait, by what ended it (doorbell: a task was enqueued or the doorbell subscription was confirmed; timer: TASK_CHECK_INTERVAL passed)."}, []string{"by"}),
	}
	r.MustRegister(m.exports, m.exportSeconds, m.renders, m.renderSeconds, m.lockAcquire, m.lockWait, m.lockLost,
		m.storageBytes, m.browserRestarts, m.callbacks, m.warnings, m.ready, m.readyChecks, m.renderWait, m.rendersInFlight,
		m.idlePolls, m.wakeups,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, o := range exportOutcomes {
		m.exports.WithLabelValues(o)
		m.exportSeconds.WithLabelValues(o)
	}
	for _, r := range renderResults {
		m.renders.WithLabelValues(r)
	}
	for _, r := range lockResults {
		m.lockAcquire.WithLabelValues(r)
	}
	for _, op := range storageOps {
		m.storageBytes.WithLabelValues(op)
	}
	for _, k := range warningKinds {
		m.warnings.WithLabelValues(k)
	}
	for _, o := range callbackOutcome {
		m.callbacks.WithLabelValues(o)
	}
	for _, by := range wakeupCauses {
		m.wakeups.WithLabelValues(by)
	}
	return m
}

// IdlePoll counts a poll of the queues that found nothing (doorbell.Observer).
func (m *Metrics) IdlePoll() { m.idlePolls.Inc() }

// Woken counts the end of an idle wait, by doorbell or timer (doorbell.Observer).
func (m *Metrics) Woken(by string) { m.wakeups.WithLabelValues(by).Inc() }

// Readiness records an evaluation of the readiness checks: checks are the
// names of those run, failures those that failed (name → reason), as
// runChecks returns them. No checks at all is ready, as /readyz answers.
func (m *Metrics) Readiness(checks []string, failures map[string]string) {
	for _, name := range checks {
		v := 1.0
		if _, failed := failures[name]; failed {
			v = 0
		}
		m.readyChecks.WithLabelValues(name).Set(v)
	}
	if len(failures) > 0 {
		m.ready.Set(0)
	} else {
		m.ready.Set(1)
	}
}

// RenderWarning implements render.WarningObserver.
func (m *Metrics) RenderWarning(kind string) { m.warnings.WithLabelValues(kind).Inc() }

// CallbackDone implements callback.Observer.
func (m *Metrics) CallbackDone(outcome string) { m.callbacks.WithLabelValues(outcome).Inc() }

// ExportDone implements export.Observer.
func (m *Metrics) ExportDone(outcome string, d time.Duration) {
	m.exports.WithLabelValues(outcome).Inc()
	m.exportSeconds.WithLabelValues(outcome).Observe(d.Seconds())
}

// WithQueues creates the per-queue series at 0, so that dashboards and
// alerts see every queue of QUEUES from a worker's first scrape.
func (m *Metrics) WithQueues(queues []string) *Metrics {
	for _, q := range queues {
		m.renderWait.WithLabelValues(q)
		m.rendersInFlight.WithLabelValues(q)
	}
	return m
}

// RenderWait implements export.Observer.
func (m *Metrics) RenderWait(queue string, d time.Duration) {
	m.renderWait.WithLabelValues(queue).Observe(d.Seconds())
}

// RenderInFlight implements export.Observer.
func (m *Metrics) RenderInFlight(queue string, delta int) {
	m.rendersInFlight.WithLabelValues(queue).Add(float64(delta))
}

// StorageBytes implements export.Observer.
func (m *Metrics) StorageBytes(op string, n int64) {
	m.storageBytes.WithLabelValues(op).Add(float64(n))
}

// LockAcquire implements lock.Observer.
func (m *Metrics) LockAcquire(result string) { m.lockAcquire.WithLabelValues(result).Inc() }

// LockWait implements lock.Observer.
func (m *Metrics) LockWait(d time.Duration) { m.lockWait.Observe(d.Seconds()) }

// LockLost implements lock.Observer.
func (m *Metrics) LockLost() { m.lockLost.Inc() }

// RenderDone records one render by result (ok, error, timeout).
func (m *Metrics) RenderDone(result string, d time.Duration) {
	m.renders.WithLabelValues(result).Inc()
	m.renderSeconds.Observe(d.Seconds())
}

// BrowserRestarted counts a Chromium restart.
func (m *Metrics) BrowserRestarted() { m.browserRestarts.Inc() }
