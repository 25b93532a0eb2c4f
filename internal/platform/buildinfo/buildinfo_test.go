package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestIsRelease: only a module version that names a release may stand in
// for Release; Go's pseudo-versions of a checkout and +dirty builds say
// less than Release does.
func TestIsRelease(t *testing.T) {
	cases := []struct {
		v    string
		want bool
	}{
		{"v0.1.0", true},
		{"v1.2.3-rc.1", true},
		{"(devel)", false},
		{"", false},
		{"v0.0.0-20261201184012-6484386f0a1b", false},
		{"v0.1.1-0.20261201184012-6484386f0a1b", false},
		{"v0.1.0-rc.1.0.20261201184012-6484386f0a1b", false},
		{"v0.1.0+dirty", false},
		{"v0.0.0-20261201184012-6484386f0a1b+dirty", false},
	}
	for _, c := range cases {
		if got := isRelease(c.v); got != c.want {
			t.Errorf("isRelease(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestDescribe: what a binary says about itself from its stamps (make
// build, GoReleaser), else from what Go recorded (go build in a checkout,
// go install …@version), else Release with an unknown commit and date.
func TestDescribe(t *testing.T) {
	const rev, when = "0123456789abcdef0123456789abcdef01234567", "2026-12-07T12:00:00Z"
	vcs := func(modified string, mainVersion string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/pdfexport/pdfexport", Version: mainVersion},
			Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
				{Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: modified}}}
	}
	devel := &debug.BuildInfo{Main: debug.Module{Path: "github.com/pdfexport/pdfexport", Version: "(devel)"}}
	cases := []struct {
		name string
		s    stamps
		bi   *debug.BuildInfo
		want Info
	}{
		{"release build (GoReleaser)", stamps{"v0.2.0", "abc123", "2026-12-01T23:19:31Z"}, vcs("false", "(devel)"),
			Info{"v0.2.0", "abc123", "2026-12-01T23:19:31Z"}},
		{"make build between releases", stamps{"v0.2.0-dev+abc123def456", "abc123def456aa-dirty", "2026-12-07T12:00:00Z"}, nil,
			Info{"v0.2.0-dev+abc123def456", "abc123def456aa-dirty", "2026-12-07T12:00:00Z"}},
		{"version stamped alone", stamps{version: "v0.2.0"}, devel, Info{"v0.2.0", "unknown", "unknown"}},
		{"go build in a checkout", stamps{}, vcs("false", "v0.0.0-20261207120000-0123456789ab"),
			Info{Release + "-dev+0123456789ab", rev, when}},
		{"go build in a changed checkout", stamps{}, vcs("true", "v0.0.0-20261207120000-0123456789ab+dirty"),
			Info{Release + "-dev+0123456789ab", rev + "-dirty", when}},
		{"go build at a release tag", stamps{}, vcs("false", "v0.2.0"), Info{"v0.2.0", rev, when}},
		{"go install of a release", stamps{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, Info{"v0.2.0", "unknown", "unknown"}},
		{"nothing recorded", stamps{}, devel, Info{Release, "unknown", "unknown"}},
		{"no build info", stamps{}, nil, Info{Release, "unknown", "unknown"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := describe(c.s, c.bi); got != c.want {
				t.Errorf("describe = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestLong: what --version prints after the binary's name, stamped and
// not.
func TestLong(t *testing.T) {
	cases := []struct {
		name, version, commit, date, want string
	}{
		{"stamped", "v0.2.0", "abc123", "2026-12-01T18:51:46Z", "v0.2.0 (commit abc123, built 2026-12-01T18:51:46Z)"},
		{"version only", "v0.2.0", "", "", "v0.2.0 (commit "},
		{"unstamped", "", "", "", Release},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, cm, d := Version, Commit, Date
			t.Cleanup(func() { Version, Commit, Date = v, cm, d })
			Version, Commit, Date = c.version, c.commit, c.date
			if got := Long(); !strings.HasPrefix(got, c.want) {
				t.Errorf("Long() = %q, want it to start with %q", got, c.want)
			}
		})
	}
}

// TestPlainGoBuild_VersionNamesTheCommit: `go build ./cmd/worker` in a git
// checkout, with no -ldflags, prints the checkout's HEAD commit and date
// and the development version, from what Go records of the checkout.
func TestPlainGoBuild_VersionNamesTheCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/worker")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		t.Skipf("not in a git checkout, so go build records no commit: %v", err)
	}
	gitDir, _ := git(root, "rev-parse", "--path-format=absolute", "--git-dir")
	commonDir, _ := git(root, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if gitDir != commonDir {
		t.Skipf("a linked git worktree (%s): go build records no commit there, its .git being a file (golang.org/issue/58218); run this test in a clone", root)
	}
	date, err := git(root, "-c", "log.showSignature=false", "log", "-1", "--format=%cd", "--date=format-local:%Y-%m-%dT%H:%M:%SZ")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "worker")
	// -buildvcs=auto is go build's default, given here in case GOFLAGS
	// turns it off on this machine.
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "./cmd/worker")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/worker: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("worker --version: %v", err)
	}
	got := strings.TrimSpace(string(out))
	version := DevVersion(Release, head)
	if tags, _ := git(root, "tag", "--points-at", "HEAD"); strings.Contains("\n"+tags+"\n", "\n"+Release+"\n") && !strings.Contains(got, "-dirty") {
		version = Release
	}
	for _, want := range []string{"pdfexport worker " + version + " ", "(commit " + head, ", built " + date + ")"} {
		if !strings.Contains(got, want) {
			t.Errorf("worker --version = %q, want it to contain %q", got, want)
		}
	}
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
