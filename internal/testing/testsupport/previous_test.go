package testsupport

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPreviousBinaries_BuildOnceAndRun: the previous release's binaries
// build from the git history and run; a second call takes them from the
// cache without building. make test runs this first, on its own, so the
// build of a cold cache is not part of cmd/worker's test timeout.
func TestPreviousBinaries_BuildOnceAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release")
	}
	dir := PreviousBinaries(t, PreviousCommit)
	start := time.Now()
	if again := PreviousBinaries(t, PreviousCommit); again != dir || time.Since(start) > 5*time.Second {
		t.Errorf("second call: %s after %v, want %s from the cache at once", again, time.Since(start), dir)
	}
	for _, name := range []string{"worker", "enqueue"} {
		out, err := exec.Command(filepath.Join(dir, name), "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "REDIS_URL") && !strings.Contains(string(out), "export") {
			t.Errorf("%s --help: %v\n%s", name, err, out)
		}
	}
}
