package testsupport

import (
	"os"
	"os/exec"
	"testing"
)

// chromiumCandidates is the search order of ChromiumPath after CHROMIUM_PATH:
// Debian's real binary first (its /usr/bin/chromium is a wrapper script).
var chromiumCandidates = []string{
	"/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
}

// ChromiumPath returns the Chromium binary the tests run: $CHROMIUM_PATH if
// set, else the first of /usr/lib/chromium/chromium, chromium,
// chromium-browser, google-chrome, google-chrome-stable. A missing browser
// fails the test (it never skips) and says how to install one.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		found, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("CHROMIUM_PATH=%q is not an executable: %v (unset it, or run `make setup` to install chromium)", p, err)
		}
		return found
	}
	for _, c := range chromiumCandidates {
		if found, err := exec.LookPath(c); err == nil {
			return found
		}
	}
	t.Fatalf("Chromium not found (tried %v): run `make setup` (apt-get install chromium) or set CHROMIUM_PATH", chromiumCandidates)
	return ""
}
