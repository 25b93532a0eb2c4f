// Package buildinfo says which release a binary is, from which commit, built
// when. Release is the version this source tree is; make build, the
// Dockerfile and GoReleaser (.goreleaser.yaml) stamp Version, Commit and Date
// at link time, and a build that was not stamped (go build, go install, the
// tests' binaries) still reports Release, so every binary can be compared
// with another by version.
package buildinfo

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
)

// Release is the newest version in CHANGELOG.md and the one .goreleaser.yaml
// releases (TestReleaseMatchesChangelog keeps the three equal): a release
// bumps all three in one commit.
const Release = "v0.2.0"

// Set with -ldflags "-X github.com/pdfexport/pdfexport/internal/buildinfo.Version=…"
// (and .Commit, .Date); empty when the build was not stamped.
var (
	// Version is the semantic version with its "v", e.g. v0.1.0.
	Version = ""
	// Commit is the full git commit the binary was built from.
	Commit = ""
	// Date is the commit's date (RFC 3339, UTC), not the wall clock at build
	// time: two builds of one commit are byte-identical.
	Date = ""
)

// String returns the version: the stamped one, else the module version of a
// `go install …@vX.Y.Z`, else Release.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && isRelease(bi.Main.Version) {
		return bi.Main.Version
	}
	return Release
}

// pseudo matches the tail of a pseudo-version, which Go derives from a
// checkout (v0.0.0-20261201184012-6484386f0a1b): a timestamp and a commit.
var pseudo = regexp.MustCompile(`[-.][0-9]{14}-[0-9a-f]{12}$`)

// isRelease tells a module version that names a release (v1.2.3, v1.2.3-rc.1)
// from "(devel)", pseudo-versions and +dirty builds, which say less than
// Release does.
func isRelease(v string) bool {
	return strings.HasPrefix(v, "v") && !strings.Contains(v, "+") && !pseudo.MatchString(v)
}

// CommitOrUnknown returns the stamped commit, else the one `go build` records
// from the checkout (vcs.revision), else "unknown".
func CommitOrUnknown() string {
	return stampedOr(Commit, "vcs.revision")
}

// DateOrUnknown returns the stamped commit date, else the one `go build`
// records (vcs.time), else "unknown".
func DateOrUnknown() string {
	return stampedOr(Date, "vcs.time")
}

func stampedOr(stamped, setting string) string {
	if stamped != "" {
		return stamped
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == setting && s.Value != "" {
				return s.Value
			}
		}
	}
	return "unknown"
}

// Long is what every binary's --version prints after its name:
// "v0.1.0 (commit 6484386…, built 2026-12-01T18:40:12Z)".
func Long() string {
	return fmt.Sprintf("%s (commit %s, built %s)", String(), CommitOrUnknown(), DateOrUnknown())
}
