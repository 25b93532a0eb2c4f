package deployments

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pdfexport/pdfexport/internal/platform/buildinfo"
)

// The checks of the release configuration (.goreleaser.yaml) against
// CHANGELOG.md, internal/platform/buildinfo and the Makefile. They read files only
// (and build the binaries once for --version), so they run in make test;
// `make release-check` builds the snapshot itself and checks what it wrote
// (release_snapshot_test.go).

// goreleaserConfig is the part of .goreleaser.yaml these checks read.
type goreleaserConfig struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Dist        string `yaml:"dist"`
	Snapshot    struct {
		VersionTemplate string `yaml:"version_template"`
	} `yaml:"snapshot"`
	Builds []struct {
		ID           string   `yaml:"id"`
		Main         string   `yaml:"main"`
		Binary       string   `yaml:"binary"`
		Env          []string `yaml:"env"`
		Goos         []string `yaml:"goos"`
		Goarch       []string `yaml:"goarch"`
		Flags        []string `yaml:"flags"`
		Ldflags      []string `yaml:"ldflags"`
		ModTimestamp string   `yaml:"mod_timestamp"`
	} `yaml:"builds"`
	Archives []struct {
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
		Files        []struct {
			Src  string `yaml:"src"`
			Info struct {
				Mtime string `yaml:"mtime"`
			} `yaml:"info"`
		} `yaml:"files"`
	} `yaml:"archives"`
	SBOMs []struct {
		Artifacts string   `yaml:"artifacts"`
		Documents []string `yaml:"documents"`
		Cmd       string   `yaml:"cmd"`
		Args      []string `yaml:"args"`
	} `yaml:"sboms"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
}

func readGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	b, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	return c
}

var (
	changelogHeading = regexp.MustCompile(`(?m)^## \[([^\]]+)\](.*)$`)
	semverRE         = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
	releaseDate      = regexp.MustCompile(`^ - [0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

// newestRelease returns the newest version of a Keep a Changelog file,
// after checking its form: "## [Unreleased]" first, then one
// "## [X.Y.Z] - YYYY-MM-DD" per release, newest first, each with its link.
func newestRelease(changelog string) (string, error) {
	hs := changelogHeading.FindAllStringSubmatch(changelog, -1)
	if len(hs) == 0 || hs[0][1] != "Unreleased" {
		return "", fmt.Errorf("the first version heading must be \"## [Unreleased]\"")
	}
	if !strings.Contains(changelog, "\n[Unreleased]: ") {
		return "", fmt.Errorf("no link for [Unreleased]")
	}
	var versions []string
	for _, h := range hs[1:] {
		v, rest := h[1], h[2]
		if !semverRE.MatchString(v) {
			return "", fmt.Errorf("heading %q: %q is not a semantic version", h[0], v)
		}
		if !releaseDate.MatchString(rest) {
			return "", fmt.Errorf("heading %q: want \"## [%s] - YYYY-MM-DD\"", h[0], v)
		}
		if !strings.Contains(changelog, "\n["+v+"]: ") {
			return "", fmt.Errorf("no link for [%s]", v)
		}
		if n := len(versions); n > 0 && !semverLess(v, versions[n-1]) {
			return "", fmt.Errorf("heading %q: versions must go newest first, %s is not older than %s", h[0], v, versions[n-1])
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		return "", fmt.Errorf("no released version under Unreleased")
	}
	return versions[0], nil
}

// semverLess compares the numeric core only; pre-releases of one version
// are not expected in the changelog.
func semverLess(a, b string) bool {
	pa, pb := semverRE.FindStringSubmatch(a), semverRE.FindStringSubmatch(b)
	for i := 1; i <= 3; i++ {
		var x, y int
		fmt.Sscan(pa[i], &x)
		fmt.Sscan(pb[i], &y)
		if x != y {
			return x < y
		}
	}
	return pa[4] != "" && pb[4] == ""
}

// versionsAgree is the check of TestReleaseMatchesChangelog: the newest
// CHANGELOG version, GoReleaser's snapshot version, buildinfo.Release and
// the git tags on HEAD (if any) name one version.
func versionsAgree(changelog, snapshotTemplate, release string, headTags []string) error {
	newest, err := newestRelease(changelog)
	if err != nil {
		return fmt.Errorf("CHANGELOG.md: %w", err)
	}
	if snapshotTemplate != newest {
		return fmt.Errorf(".goreleaser.yaml snapshot.version_template is %q, CHANGELOG.md's newest release is %s", snapshotTemplate, newest)
	}
	if release != "v"+newest {
		return fmt.Errorf("internal/platform/buildinfo.Release is %q, CHANGELOG.md's newest release is %s", release, newest)
	}
	for _, tag := range headTags {
		if semverRE.MatchString(strings.TrimPrefix(tag, "v")) && tag != "v"+newest {
			return fmt.Errorf("HEAD is tagged %s, CHANGELOG.md's newest release is %s", tag, newest)
		}
	}
	return nil
}

// TestReleaseMatchesChangelog: a release names its version once in each of
// CHANGELOG.md, .goreleaser.yaml and internal/platform/buildinfo; this fails while
// they disagree (and when the CHANGELOG leaves the Keep a Changelog form).
func TestReleaseMatchesChangelog(t *testing.T) {
	const good = "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2027-01-10\n\n## [0.1.0] - 2026-12-01\n\n[Unreleased]: u\n[0.2.0]: a\n[0.1.0]: b\n"
	cases := []struct {
		name, changelog, snapshot, release string
		tags                               []string
		wantErr                            string
	}{
		{"agree", good, "0.2.0", "v0.2.0", nil, ""},
		{"agree, tagged", good, "0.2.0", "v0.2.0", []string{"v0.2.0", "latest"}, ""},
		{"goreleaser behind", good, "0.1.0", "v0.2.0", nil, "snapshot.version_template"},
		{"buildinfo behind", good, "0.2.0", "v0.1.0", nil, "buildinfo.Release"},
		{"other tag", good, "0.2.0", "v0.2.0", []string{"v0.3.0"}, "tagged v0.3.0"},
		{"no unreleased", strings.Replace(good, "## [Unreleased]\n", "", 1), "0.2.0", "v0.2.0", nil, "Unreleased"},
		{"not semver", strings.Replace(good, "[0.2.0] - ", "[0.2] - ", 1), "0.2", "v0.2", nil, "not a semantic version"},
		{"no date", strings.Replace(good, "[0.2.0] - 2027-01-10", "[0.2.0]", 1), "0.2.0", "v0.2.0", nil, "YYYY-MM-DD"},
		{"oldest first", "## [Unreleased]\n\n## [0.1.0] - 2026-12-01\n\n## [0.2.0] - 2027-01-10\n\n[Unreleased]: u\n[0.2.0]: a\n[0.1.0]: b\n", "0.1.0", "v0.1.0", nil, "newest first"},
		{"no link", strings.Replace(good, "[0.2.0]: a\n", "", 1), "0.2.0", "v0.2.0", nil, "no link for [0.2.0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := versionsAgree(c.changelog, c.snapshot, c.release, c.tags)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one naming %q", err, c.wantErr)
			}
		})
	}
	t.Run("this repository", func(t *testing.T) {
		changelog, err := os.ReadFile("../CHANGELOG.md")
		if err != nil {
			t.Fatal(err)
		}
		var tags []string
		// A clone without tags (CI's) has none to compare; git missing is
		// the same.
		if out, err := exec.Command("git", "tag", "--points-at", "HEAD").Output(); err == nil {
			tags = strings.Fields(string(out))
		}
		if err := versionsAgree(string(changelog), readGoreleaser(t).Snapshot.VersionTemplate, buildinfo.Release, tags); err != nil {
			t.Fatal(err)
		}
	})
}

// makefileBuilds returns the Makefile build target's binaries: name → main
// package, from its `-o bin/NAME ./cmd/NAME` lines.
func makefileBuilds(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	builds := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\t\$\(GO\) build -trimpath -ldflags '\$\(LDFLAGS\)' -o bin/(\S+) (\./cmd/\S+)$`).FindAllStringSubmatch(string(b), -1) {
		builds[m[1]] = m[2]
	}
	if len(builds) == 0 {
		t.Fatal("Makefile: no `$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/NAME ./cmd/NAME` line")
	}
	return builds
}

// makefileStamps returns the buildinfo variables the Makefile's LDFLAGS set.
func makefileStamps(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^LDFLAGS = (.*)$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("Makefile: no LDFLAGS line")
	}
	return stampedVars(strings.ReplaceAll(m[1], "$(BUILDINFO)", buildinfoPkg))
}

const buildinfoPkg = "github.com/pdfexport/pdfexport/internal/platform/buildinfo"

var stampRE = regexp.MustCompile(`-X[= ]` + regexp.QuoteMeta(buildinfoPkg) + `\.(\w+)=`)

func stampedVars(ldflags string) []string {
	var vars []string
	for _, m := range stampRE.FindAllStringSubmatch(ldflags, -1) {
		vars = append(vars, m[1])
	}
	sort.Strings(vars)
	return slices.Compact(vars)
}

// TestReleaseConfig: .goreleaser.yaml builds what the Makefile builds, for
// linux/amd64 and linux/arm64, statically and reproducibly (no wall clock in
// what it stamps or in the files' times), stamps what the Makefile stamps,
// and ships the licence, notices, README and CHANGELOG, SHA256SUMS and an SBOM
// per binary.
func TestReleaseConfig(t *testing.T) {
	c := readGoreleaser(t)
	if c.Version != 2 {
		t.Errorf("version: %d, want 2 (GoReleaser v2)", c.Version)
	}
	if c.Dist != "dist" {
		t.Errorf("dist: %q, want dist (the SBOM step's ../bin paths and .gitignore assume it)", c.Dist)
	}
	want := makefileBuilds(t)
	got := map[string]string{}
	var ids []string
	stamps := makefileStamps(t)
	for _, b := range c.Builds {
		got[b.Binary] = b.Main
		ids = append(ids, b.ID)
		if !slices.Contains(b.Env, "CGO_ENABLED=0") {
			t.Errorf("build %s: env %v lacks CGO_ENABLED=0", b.ID, b.Env)
		}
		if !slices.Contains(b.Flags, "-trimpath") {
			t.Errorf("build %s: flags %v lack -trimpath", b.ID, b.Flags)
		}
		if !slices.Equal(b.Goos, []string{"linux"}) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) {
			t.Errorf("build %s: %v/%v, want [linux]/[amd64 arm64]", b.ID, b.Goos, b.Goarch)
		}
		if b.ModTimestamp != "{{ .CommitTimestamp }}" {
			t.Errorf("build %s: mod_timestamp %q, want the commit's ({{ .CommitTimestamp }})", b.ID, b.ModTimestamp)
		}
		ld := strings.Join(b.Ldflags, " ")
		if v := stampedVars(ld); !slices.Equal(v, stamps) {
			t.Errorf("build %s: stamps buildinfo %v, the Makefile %v", b.ID, v, stamps)
		}
		for _, clock := range []string{".Date", ".Now", ".Timestamp"} {
			if strings.Contains(ld, clock+" ") || strings.Contains(ld, clock+"}") {
				t.Errorf("build %s: ldflags use %s, the wall clock: two builds would differ", b.ID, clock)
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("builds %v, the Makefile builds %v", got, want)
	}
	if len(c.Archives) != 1 {
		t.Fatalf("%d archives, want one per platform holding every binary", len(c.Archives))
	}
	a := c.Archives[0]
	sort.Strings(ids)
	if gotIDs := slices.Sorted(slices.Values(a.IDs)); !slices.Equal(gotIDs, ids) {
		t.Errorf("archive ids %v, want every build %v", gotIDs, ids)
	}
	var files []string
	for _, f := range a.Files {
		files = append(files, f.Src)
		if f.Info.Mtime != "{{ .CommitDate }}" {
			t.Errorf("archive file %s: mtime %q, want the commit's ({{ .CommitDate }})", f.Src, f.Info.Mtime)
		}
		if m, err := filepath.Glob(filepath.Join("..", f.Src)); err != nil || len(m) == 0 {
			t.Errorf("archive file %s: matches nothing (%v)", f.Src, err)
		}
	}
	for _, f := range []string{"LICENSE", "NOTICE", "README.md", "docs/*.md", "CHANGELOG.md", "third_party/asynq/LICENSE"} {
		if !slices.Contains(files, f) {
			t.Errorf("archives lack %s (files: %v)", f, files)
		}
	}
	if c.Checksum.NameTemplate != "SHA256SUMS" || c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v, want SHA256SUMS, sha256", c.Checksum)
	}
	if len(c.SBOMs) != 1 || c.SBOMs[0].Artifacts != "binary" || c.SBOMs[0].Cmd != "../bin/release-sbom" {
		t.Errorf("sboms %+v, want one per binary through ../bin/release-sbom (internal/platform/sbom)", c.SBOMs)
	}
}

// TestVersionFlag: every binary's --version prints its name, version,
// commit and date, stamped the way the Makefile and GoReleaser stamp them;
// unstamped (go build), it still names buildinfo.Release.
func TestVersionFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	dir := t.TempDir()
	const commit, date = "0123456789abcdef0123456789abcdef01234567", "2026-12-01T18:51:46Z"
	stamped := fmt.Sprintf("-X %[1]s.Version=v9.8.7 -X %[1]s.Commit=%[2]s -X %[1]s.Date=%[3]s", buildinfoPkg, commit, date)
	for name, main := range makefileBuilds(t) {
		for _, c := range []struct {
			kind, ldflags, want string
		}{
			{"stamped", stamped, fmt.Sprintf("pdfexport %s v9.8.7 (commit %s, built %s)\n", name, commit, date)},
			{"unstamped", "", fmt.Sprintf("pdfexport %s %s (commit unknown, built unknown)\n", name, buildinfo.Release)},
		} {
			t.Run(name+"/"+c.kind, func(t *testing.T) {
				bin := filepath.Join(dir, name+"-"+c.kind)
				build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", c.ldflags, "-o", bin, main)
				build.Dir = ".."
				if out, err := build.CombinedOutput(); err != nil {
					t.Fatalf("go build %s: %v\n%s", main, err, out)
				}
				var stdout bytes.Buffer
				cmd := exec.Command(bin, "--version")
				cmd.Stdout = &stdout
				if err := cmd.Run(); err != nil {
					t.Fatalf("%s --version: %v", name, err)
				}
				if stdout.String() != c.want {
					t.Errorf("%s --version printed %q, want %q", name, stdout.String(), c.want)
				}
			})
		}
	}
}
