// Package deployments holds the Dockerfile, docker-compose.yml and Kubernetes
// manifests; its test keeps them consistent with the configuration the
// binaries actually read.
package deployments

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pdfexport/pdfexport/internal/platform/config"
)

// Variables read by libraries rather than by internal/platform/config: the AWS SDK's
// and OpenTelemetry's (internal/platform/tracing; the manifests show
// OTEL_EXPORTER_OTLP_ENDPOINT commented out).
var external = map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true, "AWS_PROFILE": true,
	"OTEL_EXPORTER_OTLP_ENDPOINT": true, "OTEL_SERVICE_NAME": true, "OTEL_RESOURCE_ATTRIBUTES": true, "OTEL_TRACES_SAMPLER": true, "OTEL_TRACES_SAMPLER_ARG": true}

func known() map[string]bool {
	k := map[string]bool{}
	for _, v := range config.Variables() {
		k[v.Name] = true
	}
	for v := range external {
		k[v] = true
	}
	return k
}

type container struct {
	Name string `yaml:"name"`
	Env  []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	LivenessProbe  map[string]any `yaml:"livenessProbe"`
	ReadinessProbe map[string]any `yaml:"readinessProbe"`
}

type manifest struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func TestKubernetesManifests(t *testing.T) {
	files := manifestFiles(t)
	kinds := map[string]int{}
	vars := known()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var m manifest
			err := dec.Decode(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kinds[m.Kind]++
			for _, c := range m.Spec.Template.Spec.Containers {
				if c.LivenessProbe == nil || c.ReadinessProbe == nil {
					t.Errorf("%s: container %s lacks liveness or readiness probe", f, c.Name)
				}
				for _, e := range c.Env {
					if !vars[e.Name] {
						t.Errorf("%s: container %s sets %s, which no binary reads", f, c.Name, e.Name)
					}
					if e.Name == "SHUTDOWN_TIMEOUT" {
						d, err := time.ParseDuration(e.Value)
						if err != nil {
							t.Fatal(err)
						}
						if grace := time.Duration(m.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second; grace <= d {
							t.Errorf("%s: terminationGracePeriodSeconds %s must exceed SHUTDOWN_TIMEOUT %s", f, grace, d)
						}
					}
				}
			}
		}
	}
	for _, k := range []string{"Deployment", "Service", "PodDisruptionBudget"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the manifests", k)
		}
	}
}

func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	workers := 0
	vars := known()
	for name, s := range doc.Services {
		if strings.HasPrefix(name, "worker-") {
			workers++
		}
		for v, val := range s.Environment {
			if name == "s3" || name == "redis" { // third-party servers: their variables are theirs
				if secret := strings.Contains(v, "SECRET") || strings.Contains(v, "PASSWORD"); secret && !strings.HasPrefix(val, "${") {
					t.Errorf("compose service %s sets %s to a literal", name, v)
				}
				continue
			}
			if !vars[v] {
				t.Errorf("compose service %s sets %s, which no binary reads", name, v)
			}
			// Secrets come from the environment, never a default in the file.
			if secret := strings.Contains(v, "PASSWORD") || strings.Contains(v, "TOKEN") || strings.Contains(v, "SECRET"); secret && !strings.HasPrefix(val, "${") {
				t.Errorf("compose service %s sets %s to a literal; take it from the environment (${%s:?…})", name, v, v)
			}
		}
	}
	for _, want := range []string{"redis", "s3", "api"} {
		if _, ok := doc.Services[want]; !ok {
			t.Errorf("compose file lacks service %s", want)
		}
	}
	if workers != 3 {
		t.Errorf("%d workers in compose, want 3", workers)
	}
}

func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for _, want := range []string{"AS build", "chromium", "fonts-dejavu-core", "tini", "USER 10001", "ENTRYPOINT [\"/usr/bin/tini\""} {
		if !strings.Contains(s, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "ENV ") || strings.HasPrefix(line, "    ") && strings.Contains(line, "=") && !strings.Contains(line, "RUN") {
			name := strings.TrimSpace(strings.TrimPrefix(line, "ENV "))
			name, _, _ = strings.Cut(name, "=")
			if name != "" && strings.ToUpper(name) == name && !known()[name] {
				t.Errorf("Dockerfile sets %s, which no binary reads", name)
			}
		}
	}
}
