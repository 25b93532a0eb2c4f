package deployments

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// unqualified reports whether an image reference names no registry
// ("golang:1.26-bookworm" rather than "docker.io/library/golang:…"). Docker
// reads such a name as Docker Hub's; podman resolves it through
// registries.conf, and Debian's podman (no unqualified-search registries,
// no alias for golang) refuses it: "short-name … did not resolve to an
// alias", so `podman build` fails before its first step.
func unqualified(ref string) bool {
	first, _, hasSlash := strings.Cut(ref, "/")
	if !hasSlash {
		return true
	}
	return !strings.ContainsAny(first, ".:") && first != "localhost"
}

// baseImages returns the images the FROM lines of a Dockerfile pull: not
// scratch, not an earlier stage.
func baseImages(dockerfile string) []string {
	stages := map[string]bool{}
	var refs []string
	for _, in := range parseDockerfile(dockerfile) {
		if in.Cmd != "FROM" {
			continue
		}
		var fields []string
		for _, f := range strings.Fields(in.Args) {
			if !strings.HasPrefix(f, "--") { // --platform=…
				fields = append(fields, f)
			}
		}
		if len(fields) == 0 {
			continue
		}
		if ref := fields[0]; ref != "scratch" && !stages[strings.ToLower(ref)] {
			refs = append(refs, ref)
		}
		if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
			stages[strings.ToLower(fields[2])] = true
		}
	}
	return refs
}

func TestUnqualified(t *testing.T) {
	cases := []struct {
		ref  string
		want bool
	}{
		{"golang:1.26-bookworm", true},
		{"library/debian:bookworm-slim", true},
		{"gotenberg/gotenberg:8", true},
		{"docker.io/library/golang:1.26-bookworm", false},
		{"ghcr.io/pdfexport/pdfexport:latest", false},
		{"localhost/pdfexport:dev", false},
		{"registry.local:5000/x", false},
	}
	for _, c := range cases {
		if got := unqualified(c.ref); got != c.want {
			t.Errorf("unqualified(%q) = %v, want %v", c.ref, got, c.want)
		}
	}
}

func TestBaseImages(t *testing.T) {
	cases := []struct {
		name, dockerfile string
		want             []string
	}{
		{"two stages", "FROM golang:1 AS build\nRUN go build\nFROM debian:12\nCOPY --from=build /a /a\n", []string{"golang:1", "debian:12"}},
		{"from a stage", "FROM docker.io/library/golang:1 AS build\nFROM build AS test\nFROM scratch\n", []string{"docker.io/library/golang:1"}},
		{"platform flag", "FROM --platform=linux/amd64 debian:12 AS base\n", []string{"debian:12"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := baseImages(c.dockerfile); strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("baseImages = %q, want %q", got, c.want)
			}
		})
	}
}

// TestImagesFullyQualified: the Dockerfile's base images and the compose
// file's images name their registry, so that podman builds and runs them
// as docker does, whatever registries.conf says.
func TestImagesFullyQualified(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	refs := baseImages(string(raw))
	if len(refs) == 0 {
		t.Fatal("Dockerfile: no base image")
	}
	for _, ref := range refs {
		if unqualified(ref) {
			t.Errorf("Dockerfile: FROM %s names no registry (write docker.io/library/… for Docker Hub's)", ref)
		}
	}
	compose, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image string `yaml:"image"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(compose, &doc); err != nil {
		t.Fatal(err)
	}
	for name, s := range doc.Services {
		if s.Image != "" && unqualified(s.Image) {
			t.Errorf("docker-compose.yml: service %s's image %s names no registry (write docker.io/library/… for Docker Hub's)", name, s.Image)
		}
	}
}
