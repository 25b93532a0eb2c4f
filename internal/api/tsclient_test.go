package api

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// nodeTools installs the pinned Node tools (scripts/install-node-tools.sh:
// a no-op when var/node-tools matches the lockfile) and returns the
// directory of their node_modules.
func nodeTools(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no Node tools")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "install-node-tools.sh"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/install-node-tools.sh (run by make setup): %v\n%s", err, out)
	}
	return filepath.Join(root, "var", "node-tools", "node_modules")
}

// nodeTool runs a tool of node_modules/.bin in dir.
func nodeTool(t *testing.T, modules, dir, tool string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(modules, ".bin", tool), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestOpenAPI_TypeScriptClientCompiles: the types openapi-typescript
// generates from api/openapi.yaml, with its default options, type
// api/client-check/client.ts (openapi-fetch: enqueue with only the fields a
// caller must send, long-poll, download, cancel, a callback body) so that
// tsc compiles it, and a request naming the envelope-only
// source.credentials_ref does not compile (its @ts-expect-error would be
// unused otherwise, which tsc reports).
func TestOpenAPI_TypeScriptClientCompiles(t *testing.T) {
	modules := nodeTools(t)
	spec, err := filepath.Abs("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir() // no redocly.yaml here: openapi-typescript would read it
	for _, f := range []string{"client.ts", "tsconfig.json"} {
		raw, err := os.ReadFile(filepath.Join("../../api/client-check", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	nodeTool(t, modules, dir, "openapi-typescript", spec, "--output", "schema.ts")
	nodeTool(t, modules, dir, "tsc", "--project", ".")
}

// TestOpenAPI_RedoclyLint: api/openapi.yaml passes redocly lint with the
// recommended rules (redocly.yaml names what is turned off, and why).
func TestOpenAPI_RedoclyLint(t *testing.T) {
	modules := nodeTools(t)
	out := nodeTool(t, modules, "../..", "redocly", "lint", "--format=stylish")
	if regexp.MustCompile(`(?m)^\s*\d+:\d+\s+warning\s`).MatchString(out) {
		t.Errorf("redocly lint warns:\n%s", out)
	}
}
