package testsupport

import (
	"os"
	"os/exec"
	"testing"

	"github.com/pdfexport/pdfexport/internal/render/chromium"
)

// ChromiumPath returns the Chromium binary the tests run: $CHROMIUM_PATH if
// set, else what the worker would auto-detect (chromium.Find: the headless
// shell first, then the full browser). A missing browser fails the test (it
// never skips) and says how to install one.
func ChromiumPath(t testing.TB) string {
	t.Helper()
	SkipShort(t, "Chromium")
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		found, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("CHROMIUM_PATH=%q is not an executable: %v (unset it, or run `make setup` to install chromium)", p, err)
		}
		return found
	}
	p, err := chromium.Find()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return p
}

// ChromiumBuilds returns both Chromium builds the product supports, the
// headless shell and the full browser, by name, for tests that must hold on
// each. Both are installed by make setup; a missing one fails the test.
func ChromiumBuilds(t testing.TB) map[string]string {
	t.Helper()
	SkipShort(t, "Chromium")
	shell, err := chromium.HeadlessShell()
	if err != nil {
		t.Fatalf("%v", err)
	}
	full, err := chromium.FullBrowser()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return map[string]string{"headless-shell": shell, "full": full}
}
