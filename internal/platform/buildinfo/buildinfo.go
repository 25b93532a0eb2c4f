// Package buildinfo says which release a binary is, from which commit, built
// when. Release is the newest release this source tree contains; make
// build, the Dockerfile and GoReleaser (.goreleaser.yaml) stamp Version,
// Commit and Date at link time. A build nobody stamped falls back to what
// Go recorded in the binary: the module version of a `go install …@vX.Y.Z`,
// or the commit of the checkout `go build` ran in, in which case the
// version is the development form "vX.Y.Z-dev+<commit>" (a build of a
// checkout is not a release, and Release alone would say it was).
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

// Set with -ldflags "-X github.com/pdfexport/pdfexport/internal/platform/buildinfo.Version=…"
// (and .Commit, .Date); empty when the build was not stamped.
var (
	// Version is the semantic version with its "v", e.g. v0.2.0, or
	// v0.2.0-dev+0123456789ab for a build between releases.
	Version = ""
	// Commit is the full git commit the binary was built from.
	Commit = ""
	// Date is the commit's date (RFC 3339, UTC), not the wall clock at build
	// time: two builds of one commit are byte-identical.
	Date = ""
)

// shortCommit is how many hex digits of a commit a development version
// carries: as many as a Go pseudo-version, and a fixed number, so that
// every clone derives the same version from one commit.
const shortCommit = 12

// Info is what a binary says about itself.
type Info struct {
	Version, Commit, Date string
}

// stamps are the link-time variables.
type stamps struct{ version, commit, date string }

// Get returns the binary's Info: the stamped values where set, else what
// Go recorded in the binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return describe(stamps{Version, Commit, Date}, bi)
}

// describe prefers each stamped value, then the build's own records (bi
// may be nil), then "unknown" for the commit and the date and Release for
// the version: without either, nothing tells this tree from the release.
func describe(s stamps, bi *debug.BuildInfo) Info {
	vcs := vcsOf(bi)
	info := Info{Version: s.version, Commit: s.commit, Date: s.date}
	if info.Commit == "" {
		info.Commit = vcs.commit()
	}
	if info.Date == "" {
		info.Date = vcs.time
	}
	if info.Version == "" {
		info.Version = unstampedVersion(bi, vcs)
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	if info.Date == "" {
		info.Date = "unknown"
	}
	return info
}

func unstampedVersion(bi *debug.BuildInfo, vcs vcsInfo) string {
	switch {
	case bi != nil && isRelease(bi.Main.Version):
		return bi.Main.Version
	case vcs.revision != "":
		return DevVersion(Release, vcs.revision)
	}
	return Release
}

// DevVersion is the version of a build of commit between release and the
// next one: semantic-version pre-release "dev", the commit as build
// metadata ("v0.2.0-dev+0123456789ab").
func DevVersion(release, commit string) string {
	return release + "-dev+" + commit[:min(len(commit), shortCommit)]
}

// vcsInfo is what `go build` records of the checkout it ran in
// (vcs.revision, vcs.time, vcs.modified); empty where it recorded none:
// -buildvcs=false, a source tree without .git, or a linked git worktree,
// whose .git file Go does not recognise (golang.org/issue/58218).
type vcsInfo struct {
	revision, time string
	modified       bool
}

func vcsOf(bi *debug.BuildInfo) vcsInfo {
	var v vcsInfo
	if bi == nil {
		return v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.revision = s.Value
		case "vcs.time":
			v.time = s.Value
		case "vcs.modified":
			v.modified = s.Value == "true"
		}
	}
	return v
}

// commit is the revision, "-dirty" when the work tree had changes, as
// make build stamps it.
func (v vcsInfo) commit() string {
	if v.revision != "" && v.modified {
		return v.revision + "-dirty"
	}
	return v.revision
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

// String returns the version (Info.Version).
func String() string { return Get().Version }

// CommitOrUnknown returns the commit (Info.Commit): stamped, else the one
// `go build` recorded, else "unknown".
func CommitOrUnknown() string { return Get().Commit }

// DateOrUnknown returns the commit's date (Info.Date): stamped, else the
// one `go build` recorded, else "unknown".
func DateOrUnknown() string { return Get().Date }

// Long is what every binary's --version prints after its name:
// "v0.2.0 (commit 3dd953d…, built 2026-12-01T23:19:31Z)".
func Long() string {
	i := Get()
	return fmt.Sprintf("%s (commit %s, built %s)", i.Version, i.Commit, i.Date)
}
