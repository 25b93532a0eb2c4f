package deployments

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const (
	alertsFile     = "prometheus/pdfexport-alerts.yml"
	alertTestsFile = "prometheus/pdfexport-alerts_test.yml"
)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	return rf
}

// promtool returns the path of promtool. make test's setup installs it
// (Debian's prometheus package), so a missing one fails rather than skips.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found on PATH: run `make setup` (installs Debian's prometheus package, /usr/bin/promtool) or `apt-get install prometheus`")
	}
	return p
}

// TestAlertRules_PromtoolCheckAndTest: the rules load in Prometheus
// (promtool check rules) and behave as their unit tests say (promtool test
// rules): each alert fires when it should and stays quiet on a healthy fleet.
func TestAlertRules_PromtoolCheckAndTest(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", filepath.Base(alertsFile)},
		{"test", "rules", filepath.Base(alertTestsFile)},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = filepath.Dir(alertsFile)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestAlertRules_Conventions: every alert has a for:, a severity and the
// annotations operators read (summary, description, runbook), and the unit
// tests hold a case where it fires and one where it does not.
func TestAlertRules_Conventions(t *testing.T) {
	rf := loadRules(t)
	raw, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			Name  string `yaml:"name"`
			Cases []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(raw, &tests); err != nil {
		t.Fatalf("%s: %v", alertTestsFile, err)
	}
	if len(tests.RuleFiles) != 1 || tests.RuleFiles[0] != filepath.Base(alertsFile) {
		t.Errorf("%s: rule_files = %v, want [%s]", alertTestsFile, tests.RuleFiles, filepath.Base(alertsFile))
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, c := range tc.Cases {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname] = true
			} else {
				quiet[c.Alertname] = true
			}
		}
	}
	alerts := 0
	seen := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if seen[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if r.For == "" {
				t.Errorf("alert %s has no for:", r.Alert)
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("alert %s lacks the %s annotation", r.Alert, a)
				}
			}
			if strings.Contains(r.Annotations["runbook"], "\n") {
				t.Errorf("alert %s: runbook is more than one line", r.Alert)
			}
			if !fires[r.Alert] {
				t.Errorf("%s has no case where %s fires", alertTestsFile, r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("%s has no case where %s stays quiet", alertTestsFile, r.Alert)
			}
		}
	}
	if alerts == 0 {
		t.Fatalf("%s defines no alert", alertsFile)
	}
	for name := range fires {
		if !seen[name] {
			t.Errorf("%s tests %s, which %s does not define", alertTestsFile, name, alertsFile)
		}
	}
}
