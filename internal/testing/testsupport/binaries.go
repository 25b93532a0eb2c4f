package testsupport

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// buildBinaries compiles cmd/worker, cmd/enqueue and cmd/api once per test binary.
var buildBinaries = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "pdfexport-bin-")
	if err != nil {
		return "", err
	}
	for _, name := range []string{"worker", "enqueue", "api"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/pdfexport/pdfexport/cmd/"+name).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", name, err, out)
		}
	}
	return dir, nil
})

// Binaries returns a directory holding freshly built `worker`, `enqueue` and `api`
// binaries, built once per test binary (tests that drive real processes).
func Binaries(t testing.TB) string {
	t.Helper()
	SkipShort(t, "the binaries built")
	dir, err := buildBinaries()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
