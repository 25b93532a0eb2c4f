// Package buildinfo holds the version stamped into the binaries at link time
// (make build sets it from git describe).
package buildinfo

import "runtime/debug"

// Version is set with -ldflags "-X github.com/pdfexport/pdfexport/internal/buildinfo.Version=…".
var Version = ""

// String returns the version, falling back to the module build info.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
