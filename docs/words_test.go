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
// reference anywhere in the tree and, in a production comment, a measured
// figure, a ratio, a section number of BENCHMARKS.md or a word that marks
// an earlier design kept in the code, and lets the same words pass where they belong (a test, a
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
		{"a section and a ratio in a production comment", "a.go", "package a\n\n// (BENCHMARKS.md section 7: 1.3x the bare tab)\n", true},
		{"a ratio in a production comment", "a.go", "package a\n\n// about 0.82× of the full browser's\n", true},
		{"a whole ratio in a production comment", "a.go", "package a\n\n// a tab reused is 3x faster\n", true},
		{"a ratio in words in a production comment", "a.go", "package a\n\n// costs 25–35 times its size on the heap\n", true},
		{"a section of BENCHMARKS in a production comment", "a.go", "package a\n\n// see section 7G of BENCHMARKS\n", true},
		{"a bare section number in a production comment", "b/a.go", "package a\n\n// make bench compares them (section 7)\n", true},
		{"a scenario of BENCHMARKS in a production comment", "a.go", "package a\n\n// (BENCHMARKS.md, scenario 6)\n", true},
		{"as before in a production comment", "a.go", "package a\n\n// negative: every ring wakes, as before\n", true},
		{"the earlier design in a production comment", "a.go", "package a\n\n// kept from the earlier design for the shell\n", true},
		{"a plain pointer to BENCHMARKS", "a.go", "package a\n\n// the figures are in BENCHMARKS.md\n", false},
		{"an RFC section", "a.go", "package a\n\n// (RFC 6265 section 5.1.4)\n", false},
		{"a product in code, not in a comment", "a.go", "package a\n\nconst d = 1 * time.Second // a second\n\nvar r = 1.3 * x\n", false},
		{"hex, srcset and paper sizes", "a.go", "package a\n\n// hex (0x); srcset (\"a.png 1x, b.png 2x\"); 8.27 x 11.7 in, 210 x 297 mm or 595 x\n", false},
		{"an earlier release, not an earlier design", "a.go", "package a\n\n// a worker of an earlier release keys the chapter apart\n", false},
		{"a ratio and a section in a test", "a_test.go", "package a\n\n// BENCHMARKS.md section 7: 1.3x the bare tab, as before\n", false},
		{"a ratio and a section in the bench program", "bench/a.go", "package main\n\n// BENCHMARKS.md section 7: 1.3x the bare tab, as before\n", false},
		{"a section number in a doc", "docs/X.md", "BENCHMARKS.md section 7 has 1.3x the bare tab.\n", false},
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
