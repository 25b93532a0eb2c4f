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
// generates from api/openapi.yaml, with docs/HTTP-API.md's own command run at the
// root of a copy of the repository (so redocly.yaml's apis entry applies,
// as it does for a reader who runs it as written), type
// api/client-check/client.ts (openapi-fetch: enqueue with only the fields a
// caller must send, long-poll, download, cancel, a callback body) so that
// tsc compiles it, and a request naming the envelope-only
// source.credentials_ref does not compile (its @ts-expect-error would be
// unused otherwise, which tsc reports).
func TestOpenAPI_TypeScriptClientCompiles(t *testing.T) {
	modules := nodeTools(t)
	const doc = "../../docs/HTTP-API.md"
	page, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`npx openapi-typescript ([^`]+)`").FindSubmatch(page)
	if m == nil {
		t.Fatalf("%s names no `npx openapi-typescript …` command", doc)
	}
	args := strings.Fields(string(m[1]))
	root := t.TempDir()
	for dst, src := range map[string]string{"redocly.yaml": "../../redocly.yaml", "api/openapi.yaml": "../../api/openapi.yaml", "api/gotenberg.yaml": "../../api/gotenberg.yaml",
		"client.ts": "../../api/client-check/client.ts", "tsconfig.json": "../../api/client-check/tsconfig.json"} {
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, dst)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dst), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(root, "node_modules")); err != nil {
		t.Fatal(err)
	}
	nodeTool(t, modules, root, "openapi-typescript", args...)
	if _, err := os.Stat(filepath.Join(root, "schema.ts")); err != nil {
		t.Fatalf("docs/HTTP-API.md's command (npx openapi-typescript %s) wrote no schema.ts beside client.ts: %v", m[1], err)
	}
	nodeTool(t, modules, root, "tsc", "--project", ".")
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
