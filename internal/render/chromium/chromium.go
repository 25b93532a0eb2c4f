// Package chromium finds the browser binary that pdfexport drives, so that
// the worker, the tests and the benchmarks pick the same one.
//
// Chromium ships in two builds that speak the same DevTools protocol and
// print with the same Blink: the headless shell (Debian's
// chromium-headless-shell, Google's chrome-headless-shell), a browser without
// any browser UI built for automation, and the full browser running headless.
// The shell is preferred: a render costs less CPU in it (no browser UI, a
// lighter browser process; see internal/render's package documentation) and
// it starts sooner; the figures are in BENCHMARKS.md. The full browser works
// too.
package chromium

import (
	"fmt"
	"os/exec"
	"strings"
)

// Candidates is the search order of Find: the headless shell first, then the
// full browser (Debian's real binary before its /usr/bin wrapper script).
var Candidates = []string{
	"/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell", "chrome-headless-shell",
	"/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
}

// Find returns the first of Candidates that is an executable.
func Find() (string, error) {
	for _, c := range Candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found (tried %s): install chromium-headless-shell or chromium (make setup) or set CHROMIUM_PATH", strings.Join(Candidates, ", "))
}

// FullBrowser returns the first full (not headless-shell) browser of
// Candidates. Tests and benchmarks use it to cover both builds.
func FullBrowser() (string, error) {
	for _, c := range Candidates {
		if IsHeadlessShell(c) {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no full Chromium found: install chromium (make setup)")
}

// HeadlessShell returns the first headless shell of Candidates.
func HeadlessShell() (string, error) {
	for _, c := range Candidates {
		if !IsHeadlessShell(c) {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium headless shell found: install chromium-headless-shell (make setup)")
}

// IsHeadlessShell reports whether the binary at path is a headless shell, by
// its name.
func IsHeadlessShell(path string) bool {
	return strings.Contains(path[strings.LastIndexByte(path, '/')+1:], "headless-shell")
}
