package chromium

import (
	"os"
	"path/filepath"
	"testing"
)

func TestIsHeadlessShell(t *testing.T) {
	for path, want := range map[string]bool{
		"/usr/lib/chromium/chromium-headless-shell":                true,
		"chrome-headless-shell":                                    true,
		"/opt/chrome-headless-shell/linux64/chrome-headless-shell": true,
		"/usr/lib/chromium/chromium":                               false,
		"/opt/headless-shell-builds/chromium":                      false, // the name counts, not the directory
		"google-chrome":                                            false,
	} {
		if got := IsHeadlessShell(path); got != want {
			t.Errorf("IsHeadlessShell(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestFind_PrefersTheHeadlessShell: with both builds on PATH, Find picks the
// shell and FullBrowser the other; with none, all three say what to install.
func TestFind_PrefersTheHeadlessShell(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"chromium", "chromium-headless-shell"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	saved := Candidates
	t.Cleanup(func() { Candidates = saved })
	Candidates = []string{"chromium-headless-shell", "chromium"}
	t.Setenv("PATH", dir)
	if p, err := Find(); err != nil || p != filepath.Join(dir, "chromium-headless-shell") {
		t.Errorf("Find = %q, %v", p, err)
	}
	if p, err := FullBrowser(); err != nil || p != filepath.Join(dir, "chromium") {
		t.Errorf("FullBrowser = %q, %v", p, err)
	}
	if p, err := HeadlessShell(); err != nil || p != filepath.Join(dir, "chromium-headless-shell") {
		t.Errorf("HeadlessShell = %q, %v", p, err)
	}
	t.Setenv("PATH", t.TempDir())
	for name, f := range map[string]func() (string, error){"Find": Find, "FullBrowser": FullBrowser, "HeadlessShell": HeadlessShell} {
		if p, err := f(); err == nil {
			t.Errorf("%s with nothing installed = %q, want an error", name, p)
		}
	}
}
