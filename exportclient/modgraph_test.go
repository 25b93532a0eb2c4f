package exportclient_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// forbiddenModules are what only this repository's deployment and contract
// tests need (Kubernetes API types, KEDA's CRD schemas, the OpenAPI
// validator); they live in the nested modules deployments/ and api/, so an
// API server that imports exportclient never selects them.
var forbiddenModules = []string{"k8s.io/", "sigs.k8s.io/", "github.com/getkin/", "github.com/santhosh-tekuri/"}

// TestConsumerModuleGraph: a module that requires this one for exportclient
// (a throwaway consumer in a temp dir, pointed at this tree by replace)
// has none of the forbidden modules in its `go mod graph`. It asks no
// network: GOPROXY=off, so the module cache must hold what the graph names
// (it does after any build of this module).
func TestConsumerModuleGraph(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.26.0\n\n" +
		"require github.com/pdfexport/pdfexport v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/pdfexport/pdfexport => " + root + "\n"
	main := "package main\n\nimport _ \"github.com/pdfexport/pdfexport/exportclient\"\n\nfunc main() {}\n"
	for name, body := range map[string]string{"go.mod": gomod, "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "mod", "graph")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go mod graph: %v\n%s", err, out)
	}
	edges := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(edges) < 2 {
		t.Fatalf("go mod graph printed %d edges, want the module's requirements:\n%s", len(edges), out)
	}
	seen := map[string]bool{}
	for _, e := range edges {
		for _, m := range strings.Fields(e) {
			path, _, _ := strings.Cut(m, "@")
			for _, f := range forbiddenModules {
				if strings.HasPrefix(path, f) && !seen[path] {
					seen[path] = true
					t.Errorf("a consumer of exportclient selects %s (edge %q)", path, e)
				}
			}
		}
	}
}
