package testsupport

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Release is a published version and the commit it was cut from.
type Release struct {
	Version, Commit string
}

// releasesFile lists every release's commit, newest first; make build
// reads it too. Cutting a release adds its row, and the compatibility
// tests move to it.
const releasesFile = "docs/RELEASES.md"

// releaseRow is a row of releasesFile's table: | vX.Y.Z | `<commit>` | DATE |
var releaseRow = regexp.MustCompile("(?m)^\\| (v[0-9]+\\.[0-9]+\\.[0-9]+) \\| `([0-9a-f]{40})` \\|")

// PreviousRelease is the release the compatibility tests run beside this
// build: the newest one docs/RELEASES.md names.
func PreviousRelease(t testing.TB) Release {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, releasesFile))
	if err != nil {
		t.Fatal(err)
	}
	r, err := newestRelease(string(b))
	if err != nil {
		t.Fatalf("%s: %v", releasesFile, err)
	}
	return r
}

func newestRelease(doc string) (Release, error) {
	m := releaseRow.FindStringSubmatch(doc)
	if m == nil {
		return Release{}, errors.New("no row | vX.Y.Z | `<40-digit commit>` | in its table of releases")
	}
	return Release{Version: m[1], Commit: m[2]}, nil
}

// RequirePreviousEnv makes PreviousBinaries fail instead of skip when the
// git history is not there (.ci/run sets it: CI must clone with history).
const RequirePreviousEnv = "PDFEXPORT_REQUIRE_PREVIOUS"

// PreviousBinaries returns a directory holding the `worker` and `enqueue`
// binaries of commit, built from this repository's own history (git
// archive, then go build) and cached under the user cache directory keyed
// by the full commit id, so only the first run pays for the build. Without
// the history (a shallow clone, a source tarball) the test is skipped with
// a message saying so, or fails when RequirePreviousEnv is set.
func PreviousBinaries(t testing.TB, commit string) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + "; the compatibility tests build the previous release from the git history: clone without --depth (git fetch --unshallow)"
		if os.Getenv(RequirePreviousEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	root, err := gitOut("", "rev-parse", "--show-toplevel")
	if err != nil {
		unavailable("not in a git checkout: %v", err)
	}
	full, err := gitOut(root, "rev-parse", "--verify", "--quiet", commit+"^{commit}")
	if err != nil {
		unavailable("commit %s is not in this clone's history", commit)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "pdfexport", "previous", full)
	names := []string{"worker", "enqueue"}
	if haveAll(dir, names) {
		return dir
	}
	src := t.TempDir()
	archive := filepath.Join(src, "src.tar")
	if _, err := gitOut(root, "archive", "--format=tar", "-o", archive, full); err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	tree := filepath.Join(src, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", tree).CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", commit, err, out)
	}
	// Built into a directory of its own and renamed into place, so that
	// test binaries building it at once never see half a cache entry.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	stage, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.RemoveAll(stage) }()
	for _, name := range names {
		cmd := exec.Command("go", "build", "-o", filepath.Join(stage, name), "./cmd/"+name)
		cmd.Dir = tree
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s of %s: %v\n%s", name, commit, err, out)
		}
	}
	if err := os.Rename(stage, dir); err != nil && !haveAll(dir, names) {
		t.Fatalf("caching the binaries of %s: %v", commit, err)
	}
	return dir
}

func haveAll(dir string, names []string) bool {
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
