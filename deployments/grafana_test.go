package deployments

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
	"github.com/pdfexport/pdfexport/internal/worker"
)

const dashboardFile = "grafana/pdfexport.json"

type dashboard struct {
	SchemaVersion int    `json:"schemaVersion"`
	UID           string `json:"uid"`
	Title         string `json:"title"`
	Panels        []struct {
		ID          int             `json:"id"`
		Type        string          `json:"type"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		Datasource  json.RawMessage `json:"datasource"`
		Targets     []struct {
			Expr       string          `json:"expr"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// variableQuery is the query of a Grafana query variable: a string, or the
// Prometheus editor's {"query": …}.
func variableQuery(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Query
}

const datasourceRef = `{"type":"prometheus","uid":"${datasource}"}`

func sameJSON(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// TestGrafanaDashboard_Structure: the dashboard imports into any Grafana
// with a Prometheus data source (a ${datasource} variable, no fixed uid), has
// a queue variable from asynq_queue_size, and each panel says what it shows
// and what a bad value looks like.
func TestGrafanaDashboard_Structure(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion < 36 || d.UID == "" || d.Title == "" {
		t.Errorf("schemaVersion %d, uid %q, title %q", d.SchemaVersion, d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		switch v.Name {
		case "datasource":
			if v.Type != "datasource" || variableQuery(v.Query) != "prometheus" {
				t.Errorf("variable datasource: type %s, query %s; want a prometheus datasource variable", v.Type, v.Query)
			}
		case "queue":
			if q := variableQuery(v.Query); v.Type != "query" || q != "label_values(asynq_queue_size, queue)" || !sameJSON(v.Datasource, datasourceRef) {
				t.Errorf("variable queue: type %s, query %q, datasource %s", v.Type, q, v.Datasource)
			}
		}
	}
	if vars["datasource"] == "" || vars["queue"] == "" {
		t.Errorf("variables %v, want datasource and queue", vars)
	}
	ids := map[int]bool{}
	panels := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		panels++
		if len(strings.TrimSpace(p.Description)) < 40 {
			t.Errorf("panel %q: description %q does not say what it means and what a bad value looks like", p.Title, p.Description)
		}
		if !sameJSON(p.Datasource, datasourceRef) {
			t.Errorf("panel %q: datasource %s, want %s", p.Title, p.Datasource, datasourceRef)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" || !sameJSON(q.Datasource, datasourceRef) {
				t.Errorf("panel %q: query %q with datasource %s", p.Title, q.Expr, q.Datasource)
			}
		}
	}
	if panels < 10 {
		t.Errorf("%d panels", panels)
	}
}

// query is one PromQL expression of the dashboard or the alert rules.
type query struct{ where, expr string }

func (q query) String() string { return q.where + ": " + q.expr }

// observabilityQueries returns every PromQL expression the dashboard
// (panels and variables) and the alert rules evaluate.
func observabilityQueries(t *testing.T) (dash, alerts []query) {
	t.Helper()
	d := loadDashboard(t)
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			dash = append(dash, query{"panel " + strconv.Quote(p.Title), q.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			dash = append(dash, query{"variable " + v.Name, variableQuery(v.Query)})
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, query{"alert " + r.Alert + r.Record, r.Expr})
		}
	}
	return dash, alerts
}

var (
	// labelValues is Grafana's label_values(selector, label): only its first
	// argument is PromQL.
	labelValues = regexp.MustCompile(`label_values\(\s*([^,(){}]*(?:\{[^}]*\})?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)`)
	stringLit   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	matchers    = regexp.MustCompile(`\{[^}]*\}`)
	ranges      = regexp.MustCompile(`\[[^\]]*\]`)
	grouping    = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier  = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	keywords    = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true}
	// selector is a metric name with its label matchers.
	selector = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}`)
	matcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
)

// metricNames returns the metric names a PromQL expression (or a Grafana
// label_values query) selects: identifiers outside string literals, label
// matchers, ranges and grouping clauses that are not a function or
// aggregation (followed by "(") nor a keyword. Names are as written:
// histogram series keep their _bucket, _sum or _count suffix.
func metricNames(expr string) []string {
	expr = labelValues.ReplaceAllString(expr, "$1")
	expr = stringLit.ReplaceAllString(expr, `""`)
	expr = matchers.ReplaceAllString(expr, " ")
	expr = ranges.ReplaceAllString(expr, " ")
	expr = grouping.ReplaceAllString(expr, " ")
	var names []string
	for _, loc := range identifier.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(expr[loc[0]-1:loc[0]], "$.0123456789") {
			continue // a Grafana variable, or the exponent of a number
		}
		if rest := strings.TrimLeft(expr[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") || keywords[name] {
			continue
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// equalityMatchers returns, per metric name, the label="value" matchers of
// the expression (values with a Grafana variable left out).
func equalityMatchers(expr string) map[string][][2]string {
	out := map[string][][2]string{}
	for _, sel := range selector.FindAllStringSubmatch(expr, -1) {
		for _, m := range matcher.FindAllStringSubmatch(sel[2], -1) {
			if m[2] == "=" && !strings.Contains(m[3], "$") {
				out[sel[1]] = append(out[sel[1]], [2]string{m[1], m[3]})
			}
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`max by (queue) (asynq_queue_latency_seconds{queue=~"$queue"})`:                                                   "asynq_queue_latency_seconds",
		`histogram_quantile(0.95, sum by (le) (rate(pdfexport_render_seconds_bucket[$__rate_interval])))`:                 "pdfexport_render_seconds_bucket",
		`sum(rate(a_total{outcome="failed"}[10m])) / sum(rate(a_total[10m])) > 0.05 and sum(increase(b_total[10m])) >= 3`: "a_total b_total",
		`sum by (instance) (increase(x_total[30m])) > 3 + sum by (instance) (increase(y_total[30m])) / 100`:               "x_total y_total",
		`absent(pdfexport_ready == 1)`:                                                "pdfexport_ready",
		`up{job="pdfexport-worker"} == 0`:                                             "up",
		`label_values(asynq_queue_size, queue)`:                                       "asynq_queue_size",
		`label_values(asynq_queue_size{state="x"}, queue)`:                            "asynq_queue_size",
		`label_values(asynq_queue_size{a="1",b="2"}, queue)`:                          "asynq_queue_size",
		`count by (check) (pdfexport_ready_check == 0)`:                               "pdfexport_ready_check",
		`rate(m_total[5m] offset 1h) * on (instance) group_left (version) build_info`: "build_info m_total",
		`sum(rate({__name__="ignored"}[1m])) without (le) > 1e3`:                      "",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("metricNames(%s) = %q, want %q", expr, got, want)
		}
	}
	got := equalityMatchers(`sum(rate(pdfexport_exports_total{outcome="failed", queue=~"$q"}[5m])) / up{job="w"}`)
	if fmt.Sprint(got) != `map[pdfexport_exports_total:[[outcome failed]] up:[[job w]]]` {
		t.Errorf("equalityMatchers = %v", got)
	}
}

// promSeries is one sample line of the text exposition format.
type promSeries struct {
	name   string
	labels map[string]string
}

var sampleLabel = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// parseExposition returns the series of a /metrics answer by name, and the
// metric families (# TYPE lines) with their types.
func parseExposition(body string) (map[string][]promSeries, map[string]string) {
	series, families := map[string][]promSeries{}, map[string]string{}
	for line := range strings.SplitSeq(body, "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, typ, ok := strings.Cut(f, " "); ok {
				families[name] = typ
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			continue
		}
		s := promSeries{name: line[:end], labels: map[string]string{}}
		if line[end] == '{' {
			closing := strings.LastIndex(line, "}")
			for _, m := range sampleLabel.FindAllStringSubmatch(line[end:closing+1], -1) {
				s.labels[m[1]] = m[2]
			}
		}
		series[s.name] = append(series[s.name], s)
	}
	return series, families
}

// family strips a histogram or summary series suffix.
func family(name string, families map[string]string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && (families[base] == "histogram" || families[base] == "summary") {
			return base
		}
	}
	return name
}

// synthetic are series Prometheus itself adds to every scrape.
var synthetic = map[string]bool{"up": true}

// TestDashboardAndAlerts_UseMetricsTheWorkerExports starts a real worker
// (Redis, Chromium, file storage, its admin server on a free loopback
// port), runs an export on each queue, and checks that every metric the
// dashboard and the alert rules query is on its /metrics — at a worker's
// start, before any event, thanks to the label values NewMetrics creates —
// with every label value they select, and that the dashboard shows every
// pdfexport_* metric.
func TestDashboardAndAlerts_UseMetricsTheWorkerExports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis and Chromium")
	}
	redis := testsupport.StartRedis(t)
	admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	cfg, err := config.Load([]string{"REDIS_URL=" + redis.URL(), "STORAGE_URL=file://" + t.TempDir(), "ADMIN_ADDR=" + admin,
		"CHROMIUM_PATH=" + testsupport.ChromiumPath(t), "RENDER_CONCURRENCY=1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := worker.New(cfg, worker.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)

	scrape := func() string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics = %d %.300s", resp.StatusCode, body)
		}
		return string(body)
	}
	dash, alerts := observabilityQueries(t)

	// Before any export: every pdfexport_* series a query names exists, so
	// that rate() and the alerts work from a worker's first scrape.
	fresh, freshFamilies := parseExposition(scrape())
	for _, q := range append(dash, alerts...) {
		for _, name := range metricNames(q.expr) {
			if _, known := freshFamilies[family(name, freshFamilies)]; !known {
				continue // an unknown name: reported below
			}
			if strings.HasPrefix(name, "pdfexport_") && len(fresh[name]) == 0 {
				t.Errorf("a fresh worker's /metrics has no %s series (%s): create its label values in admin.NewMetrics", name, q)
			}
		}
	}

	// One export per queue (the same document: one render, the others
	// reused), so asynq's queue collector reports every queue.
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, queue := range []string{"critical", "default", "batch"} {
		job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "metrics", Version: "1", HTML: "<h1>metrics</h1>"}, exportclient.Queue(queue))
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Wait(ctx, job.TaskID, 20*time.Millisecond)
		if err != nil || st.State != exportclient.StateCompleted {
			t.Fatalf("export on %s: %+v, %v", queue, st, err)
		}
	}

	series, families := parseExposition(scrape())
	if v := series["pdfexport_ready"]; len(v) != 1 {
		t.Errorf("pdfexport_ready series: %v", v)
	}
	checks := map[string]bool{}
	for _, s := range series["pdfexport_ready_check"] {
		checks[s.labels["check"]] = true
	}
	for _, check := range []string{"redis", "locks", "storage", "chromium"} {
		if !checks[check] {
			t.Errorf("no pdfexport_ready_check{check=%q}", check)
		}
	}
	queried := map[string]bool{}
	for _, q := range append(dash, alerts...) {
		names := metricNames(q.expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric found in the query", q)
		}
		for _, name := range names {
			if synthetic[name] {
				continue
			}
			if len(series[name]) == 0 {
				t.Errorf("%s: the worker exports no %s", q, name)
				continue
			}
			queried[family(name, families)] = true
		}
		for name, ms := range equalityMatchers(q.expr) {
			if !strings.HasPrefix(name, "pdfexport_") {
				continue
			}
			for _, m := range ms {
				if !slices.ContainsFunc(series[name], func(s promSeries) bool { return s.labels[m[0]] == m[1] }) {
					t.Errorf("%s: the worker exports no %s{%s=%q}", q, name, m[0], m[1])
				}
			}
		}
	}
	for _, queue := range []string{"critical", "default", "batch"} {
		if !slices.ContainsFunc(series["asynq_queue_latency_seconds"], func(s promSeries) bool { return s.labels["queue"] == queue }) {
			t.Errorf("no asynq_queue_latency_seconds{queue=%q} after an export on it", queue)
		}
	}
	// The dashboard shows every metric of ours.
	onDashboard := map[string]bool{}
	for _, q := range dash {
		for _, name := range metricNames(q.expr) {
			onDashboard[family(name, families)] = true
		}
	}
	for name := range families {
		if strings.HasPrefix(name, "pdfexport_") && !onDashboard[name] {
			t.Errorf("%s is exported but on no panel of %s", name, dashboardFile)
		}
	}
	if len(queried) < 10 {
		t.Errorf("only %d metrics queried: %v", len(queried), queried)
	}
}
