package testsupport

import (
	"os/exec"
	"path/filepath"
	"regexp"
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
	prev := PreviousRelease(t)
	dir := PreviousBinaries(t, prev.Commit)
	start := time.Now()
	if again := PreviousBinaries(t, prev.Commit); again != dir || time.Since(start) > 5*time.Second {
		t.Errorf("second call: %s after %v, want %s from the cache at once", again, time.Since(start), dir)
	}
	for _, name := range []string{"worker", "enqueue"} {
		out, err := exec.Command(filepath.Join(dir, name), "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "REDIS_URL") && !strings.Contains(string(out), "export") {
			t.Errorf("%s --help: %v\n%s", name, err, out)
		}
	}
}

// TestNewestRelease: the previous release is the first row of
// docs/RELEASES.md's table, whatever follows it; a table without one is an
// error, not a silent skip of the compatibility tests.
func TestNewestRelease(t *testing.T) {
	const a, b = "3dd953d50bdd92c52f12ac6d81d1af8bd07284d5", "6b4942a37f47a4174e1aedd1e643c290681680f4"
	for _, tc := range []struct {
		name, doc string
		want      Release
		err       bool
	}{
		{"newest first", "| version | commit | date |\n|---|---|---|\n| v0.2.0 | `" + a + "` | 2026-12-01 |\n| v0.1.0 | `" + b + "` | 2026-12-01 |\n",
			Release{"v0.2.0", a}, false},
		{"after other text", "Some `v9.9.9` prose.\n\n| v0.1.0 | `" + b + "` | 2026-12-01 |\n", Release{"v0.1.0", b}, false},
		{"a short commit", "| v0.2.0 | `3dd953d` | 2026-12-01 |\n", Release{}, true},
		{"no table", "# Releases\n", Release{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newestRelease(tc.doc)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("newestRelease = %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestPreviousRelease_NamesARelease: the commit docs/RELEASES.md names for
// the newest release has that release as its CHANGELOG.md's newest
// heading, when the history is there.
func TestPreviousRelease_NamesARelease(t *testing.T) {
	prev := PreviousRelease(t)
	root, err := gitOut("", "rev-parse", "--show-toplevel")
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	if _, err := gitOut(root, "cat-file", "-e", prev.Commit+"^{commit}"); err != nil {
		t.Skipf("%s (%s) is not in this clone's history: %v", prev.Version, prev.Commit, err)
	}
	changelog, err := gitOut(root, "show", prev.Commit+":CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	newest := regexp.MustCompile(`(?m)^## \[([0-9][^\]]*)\]`).FindStringSubmatch(changelog)
	if newest == nil || "v"+newest[1] != prev.Version {
		t.Errorf("CHANGELOG.md of %s's commit %s: newest release %v, want %s", prev.Version, prev.Commit, newest, prev.Version)
	}
}
