package deployments

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/pdfexport/pdfexport/exportclient"
	"github.com/pdfexport/pdfexport/internal/platform/config"
	"github.com/pdfexport/pdfexport/internal/render"
	"github.com/pdfexport/pdfexport/internal/spec"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
	"github.com/pdfexport/pdfexport/internal/worker"
)

// stubPDF stands in for Chromium: what is tested is where tasks wait, not
// how they render.
type stubPDF struct{}

func (stubPDF) Render(ctx context.Context, _ render.Source, _ spec.PrintSettings, sink func(context.Context, io.Reader) error) (render.Stats, error) {
	pdf := []byte("%PDF-1.4\n% stub\n%%EOF\n")
	return render.Stats{Pages: 1, Bytes: int64(len(pdf))}, sink(ctx, bytes.NewReader(pdf))
}

// sampleValues returns the values of a metric's samples whose labels
// include want, keyed by the value of label by.
func sampleValues(body, name string, want map[string]string, by string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		closing := strings.LastIndex(line, "}")
		got := map[string]string{}
		for _, m := range sampleLabel.FindAllStringSubmatch(line[len(name):closing+1], -1) {
			got[m[1]] = m[2]
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[closing+1:]), 64)
		if err == nil {
			out[got[by]] = v
		}
	}
	return out
}

// adapterTemplate is prometheus-adapter's <<.Series>> / <<.LabelMatchers>>.
var adapterTemplate = regexp.MustCompile(`,?\s*<<\.[A-Za-z]+>>`)

// TestAutoscalers_ReadWhatTheWorkerProduces starts Redis and a real worker
// (internal/worker, as cmd/worker builds it, with a stub in place of
// Chromium), pauses every queue and enqueues a different number of exports
// on each through exportclient. Then the list every KEDA trigger reads
// holds exactly that queue's exports, the worker's /metrics reports the
// same numbers in the series the prometheus-adapter rule selects, and both
// give the autoscaler the same backlog. Once the queues resume the worker
// takes every task from those lists and they drain to 0: a trigger on a
// key or metric nobody writes would read 0 for ever, silently.
func TestAutoscalers_ReadWhatTheWorkerProduces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis")
	}
	objs := loadObjects(t)
	so := loadScaledObject(t, objs)
	rule := loadAdapterRule(t, objs)
	queues := workerQueues(t)

	redis := testsupport.StartRedis(t)
	admin := "127.0.0.1:" + strconv.Itoa(testsupport.FreePort(t))
	cfg, err := config.Load([]string{"REDIS_URL=" + redis.URL(), "STORAGE_URL=file://" + t.TempDir(), "ADMIN_ADDR=" + admin})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := worker.New(cfg, worker.Options{Logger: slog.New(slog.DiscardHandler), Renderer: stubPDF{}})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)
	u, _ := url.Parse(cfg.RedisURL)
	db := strings.TrimPrefix(u.Path, "/")

	insp := asynq.NewInspector(asynq.RedisClientOpt{Addr: redis.Addr()})
	defer insp.Close()
	c, err := exportclient.New(exportclient.Config{Redis: asynq.RedisClientOpt{Addr: redis.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[string]int{}
	var jobs []string
	for i, q := range queues {
		if err := insp.PauseQueue(q); err != nil {
			t.Fatal(err)
		}
		want[q] = 2*i + 3
		for n := range want[q] {
			job, err := c.Enqueue(ctx, exportclient.Request{ManualID: "scale", Version: fmt.Sprintf("%s-%d", q, n), HTML: "<p>scale</p>"},
				exportclient.Queue(q))
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, job.TaskID)
		}
	}

	rdb := redis.Client()
	defer rdb.Close()
	lists := map[string]string{}
	fromLists := map[string]float64{}
	for _, tr := range so.Spec.Triggers {
		name := tr.Metadata["listName"]
		lists[tr.Name] = name
		if idx := tr.Metadata["databaseIndex"]; idx != "" && idx != db {
			t.Errorf("trigger %s reads database %s, the worker's REDIS_URL is database %s", tr.Name, idx, db)
		}
		typ, err := rdb.Type(ctx, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		n, err := rdb.LLen(ctx, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		if typ != "list" || int(n) != want[tr.Name] {
			t.Errorf("trigger %s: %s is a %s of %d, want a list of the queue's %d pending exports", tr.Name, name, typ, n, want[tr.Name])
		}
		fromLists[tr.Name] = float64(n)
	}

	scrape := func() string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	body := scrape()
	series, _ := parseExposition(body)
	for _, q := range []query{{"adapter seriesQuery", rule.SeriesQuery}, {"adapter metricsQuery", adapterTemplate.ReplaceAllString(rule.MetricsQuery, "")}} {
		names := metricNames(q.expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric", q)
		}
		for _, name := range names {
			if len(series[name]) == 0 {
				t.Errorf("%s: the worker exports no %s", q, name)
			}
		}
		for name, ms := range equalityMatchers(q.expr) {
			for _, m := range ms {
				found := false
				for _, s := range series[name] {
					found = found || s.labels[m[0]] == m[1]
				}
				if !found {
					t.Errorf("%s: the worker exports no %s{%s=%q}", q, name, m[0], m[1])
				}
			}
		}
	}
	pending := sampleValues(body, "asynq_tasks_enqueued_total", map[string]string{"state": "pending"}, "queue")
	for _, q := range queues {
		if pending[q] != fromLists[q] {
			t.Errorf("queue %s: asynq_tasks_enqueued_total{state=\"pending\"} = %v, its list holds %v", q, pending[q], fromLists[q])
		}
	}
	// The backlog as KEDA's formula computes it from the lists, and as the
	// adapter's query weighs the metric (critical and default 1, batch 1/10).
	kedaBacklog, err := evalFormula(so.Spec.Advanced.ScalingModifiers.Formula, fromLists)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rule.MetricsQuery, `queue=~"critical|default"`) || !strings.Contains(rule.MetricsQuery, `queue="batch"`) ||
		!strings.Contains(rule.MetricsQuery, ") / 10") {
		t.Errorf("adapter query %q: not the weights this test assumes", rule.MetricsQuery)
	}
	if adapterBacklog := pending["critical"] + pending["default"] + pending["batch"]/10; adapterBacklog != kedaBacklog || kedaBacklog == 0 {
		t.Errorf("backlog: KEDA formula %v, adapter query %v", kedaBacklog, adapterBacklog)
	}

	// The worker takes its tasks from exactly those lists.
	for _, q := range queues {
		if err := insp.UnpauseQueue(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range jobs {
		if st, err := c.Wait(ctx, id, 20*time.Millisecond); err != nil || st.State != exportclient.StateCompleted {
			t.Fatalf("export %s: %+v, %v", id, st, err)
		}
	}
	for q, name := range lists {
		if n, err := rdb.LLen(ctx, name).Result(); err != nil || n != 0 {
			t.Errorf("queue %s done, %s still holds %d (%v)", q, name, n, err)
		}
	}
	pending = sampleValues(scrape(), "asynq_tasks_enqueued_total", map[string]string{"state": "pending"}, "queue")
	for _, q := range queues {
		if v, ok := pending[q]; !ok || v != 0 {
			t.Errorf("queue %s done: asynq_tasks_enqueued_total{state=\"pending\"} = %v (present %v)", q, v, ok)
		}
	}
}

// evalFormula evaluates a KEDA scalingModifiers formula made of trigger
// names, numbers, + - * / and parentheses (the subset keda.yaml uses of
// expr-lang, KEDA's expression language).
func evalFormula(f string, vars map[string]float64) (float64, error) {
	toks := regexp.MustCompile(`\s*([A-Za-z_][A-Za-z0-9_]*|[0-9.]+|[-+*/()])`).FindAllStringSubmatch(f, -1)
	pos := 0
	var expr, term, factor func() (float64, error)
	peek := func() string {
		if pos < len(toks) {
			return toks[pos][1]
		}
		return ""
	}
	factor = func() (float64, error) {
		tok := peek()
		pos++
		switch {
		case tok == "(":
			v, err := expr()
			if peek() != ")" {
				return 0, fmt.Errorf("formula %q: ) expected", f)
			}
			pos++
			return v, err
		case tok != "" && (tok[0] >= '0' && tok[0] <= '9'):
			return strconv.ParseFloat(tok, 64)
		case regexp.MustCompile(`^[A-Za-z_]`).MatchString(tok):
			v, ok := vars[tok]
			if !ok {
				return 0, fmt.Errorf("formula %q: no trigger %s", f, tok)
			}
			return v, nil
		}
		return 0, fmt.Errorf("formula %q: unexpected %q", f, tok)
	}
	binary := func(next func() (float64, error), ops string, apply func(string, float64, float64) float64) func() (float64, error) {
		return func() (float64, error) {
			v, err := next()
			for err == nil && peek() != "" && strings.Contains(ops, peek()) {
				op := peek()
				pos++
				var r float64
				r, err = next()
				v = apply(op, v, r)
			}
			return v, err
		}
	}
	term = binary(factor, "*/", func(op string, a, b float64) float64 {
		if op == "*" {
			return a * b
		}
		return a / b
	})
	expr = binary(term, "+-", func(op string, a, b float64) float64 {
		if op == "+" {
			return a + b
		}
		return a - b
	})
	v, err := expr()
	if err == nil && pos != len(toks) {
		err = fmt.Errorf("formula %q: trailing %q", f, peek())
	}
	return v, err
}

// TestAdapterRule_Promtool evaluates the prometheus-adapter rule's
// metricsQuery with promtool's rule unit tests, on the series two workers
// export for the same queues: each queue counts once (not once per worker),
// batch a tenth, other states not at all — the value KEDA's formula gives
// for the same lists.
func TestAdapterRule_Promtool(t *testing.T) {
	bin := promtool(t)
	objs := loadObjects(t)
	rule := loadAdapterRule(t, objs)
	so := loadScaledObject(t, objs)
	expr := strings.ReplaceAll(rule.MetricsQuery, "<<.LabelMatchers>>", `namespace="pdf"`)
	pending := map[string]float64{"critical": 5, "default": 7, "batch": 30}
	want, err := evalFormula(so.Spec.Advanced.ScalingModifiers.Formula, pending)
	if err != nil {
		t.Fatal(err)
	}
	var series strings.Builder
	for _, worker := range []string{"worker-a", "worker-b"} {
		for q, n := range pending {
			for state, v := range map[string]float64{"pending": n, "active": 100, "retry": 50} {
				fmt.Fprintf(&series, "      - series: 'asynq_tasks_enqueued_total{namespace=\"pdf\",instance=%q,queue=%q,state=%q}'\n        values: '%gx5'\n",
					worker, q, state, v)
			}
		}
	}
	dir := t.TempDir()
	rules := "groups:\n  - name: adapter\n    rules:\n      - record: " + rule.Name.As + "\n        expr: |\n" + indent(expr, "          ")
	tests := fmt.Sprintf(`rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s    promql_expr_test:
      - expr: %s
        eval_time: 3m
        exp_samples:
          - labels: '%s{namespace="pdf"}'
            value: %g
`, series.String(), rule.Name.As, rule.Name.As, want)
	for name, content := range map[string]string{"rules.yml": rules, "tests.yml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"check", "rules", "rules.yml"}, {"test", "rules", "tests.yml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s\nrules.yml:\n%s", strings.Join(args, " "), err, out, rules)
		}
	}
}

func indent(s, prefix string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + line + "\n")
	}
	return b.String()
}
