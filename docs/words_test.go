package docs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWords: scripts/check-words.sh (make lint) refuses a tracker's
// reference anywhere in the tree and a measured figure in a production
// comment, and lets the same words pass where they belong (a test, a
// benchmark) or where they mean something else.
func TestCheckWords(t *testing.T) {
	// The words apart from their numbers, so that this file is not
	// refused itself.
	const issue, ticket = "issue", "ticket"
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	script, err := filepath.Abs("../scripts/check-words.sh")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, text string
		refused          bool
	}{
		{"issue number in a doc", "docs/X.md", "Fixed in " + issue + " 47.\n", true},
		{"ticket in a comment", "a.go", "package a\n\n// see " + ticket + " #12\n", true},
		{"issue number in a test", "a_test.go", "package a\n\n// the bug of " + issue + " 3\n", true},
		{"figure in a production comment", "a.go", "package a\n\n// 766 MiB resident for the manual\n", true},
		{"p50 in a production comment", "a.go", "package a\n\n// a p50 pick-up of 9.8 ms instead\n", true},
		{"CPU-seconds in a production comment", "b/a.go", "package a\n\n// costs 9.5 CPU-seconds\n", true},
		{"measured count in a production comment", "a.go", "package a\n\n// 1000 of them measured 1000 Redis commands a second\n", true},
		{"figure in a test", "a_test.go", "package a\n\n// 766 MiB resident for the manual\n", false},
		{"figure in the bench program", "bench/a.go", "package main\n\n// a p50 pick-up of 9.8 ms\n", false},
		{"a verb, not a reference", "docs/X.md", "Each token may issue requests; issues are tracked elsewhere.\n", false},
		{"a bound, not a measurement", "a.go", "package a\n\n// at most 256 MiB; 5 ms windows\n", false},
		{"an upstream issue URL", "a.go", "package a\n\n// https://github.com/hibiken/asynq/issues/123\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, tt.path)
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
				if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			out, err := exec.Command(script, dir).CombinedOutput()
			var exit *exec.ExitError
			switch {
			case err == nil && tt.refused:
				t.Fatalf("check-words passed %s:\n%s", tt.path, tt.text)
			case err != nil && !tt.refused:
				t.Fatalf("check-words refused %s: %v\n%s", tt.path, err, out)
			case err != nil && !errors.As(err, &exit):
				t.Fatalf("check-words did not run: %v\n%s", err, out)
			case tt.refused && !strings.Contains(string(out), tt.path):
				t.Fatalf("check-words refused without naming %s:\n%s", tt.path, out)
			}
		})
	}
}
