package testsupport

import (
	"os"
	"path/filepath"
	"testing"
)

// TestModuleRoot_PassesNestedModules: from a package of a nested module
// (deployments/, api/) the root is still the root module's directory, where
// bin/ is, not the nested module's.
func TestModuleRoot_PassesNestedModules(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":             "module github.com/pdfexport/pdfexport\n\ngo 1.26.0\n",
		"deployments/go.mod": "module github.com/pdfexport/pdfexport/deployments\n\ngo 1.26.0\n",
		"api/go.mod":         "module \"github.com/pdfexport/pdfexport/api\"\n",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{".", "deployments", "api", "internal/x"} {
		t.Run(dir, func(t *testing.T) {
			wd := filepath.Join(root, dir)
			if err := os.MkdirAll(wd, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Chdir(wd)
			got, err := moduleRoot()
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := filepath.EvalSymlinks(root); got != root && got != want {
				t.Errorf("moduleRoot from %s = %s, want %s", dir, got, root)
			}
		})
	}
}
