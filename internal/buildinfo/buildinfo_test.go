package buildinfo

import (
	"strings"
	"testing"
)

// TestIsRelease: only a module version that names a release may stand in
// for Release; Go's pseudo-versions of a checkout and +dirty builds say
// less than Release does.
func TestIsRelease(t *testing.T) {
	cases := []struct {
		v    string
		want bool
	}{
		{"v0.1.0", true},
		{"v1.2.3-rc.1", true},
		{"(devel)", false},
		{"", false},
		{"v0.0.0-20261201184012-6484386f0a1b", false},
		{"v0.1.1-0.20261201184012-6484386f0a1b", false},
		{"v0.1.0-rc.1.0.20261201184012-6484386f0a1b", false},
		{"v0.1.0+dirty", false},
		{"v0.0.0-20261201184012-6484386f0a1b+dirty", false},
	}
	for _, c := range cases {
		if got := isRelease(c.v); got != c.want {
			t.Errorf("isRelease(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestLong: what --version prints after the binary's name, stamped and
// not.
func TestLong(t *testing.T) {
	cases := []struct {
		name, version, commit, date, want string
	}{
		{"stamped", "v0.2.0", "abc123", "2026-12-01T18:51:46Z", "v0.2.0 (commit abc123, built 2026-12-01T18:51:46Z)"},
		{"version only", "v0.2.0", "", "", "v0.2.0 (commit "},
		{"unstamped", "", "", "", Release + " (commit "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, cm, d := Version, Commit, Date
			t.Cleanup(func() { Version, Commit, Date = v, cm, d })
			Version, Commit, Date = c.version, c.commit, c.date
			if got := Long(); !strings.HasPrefix(got, c.want) {
				t.Errorf("Long() = %q, want it to start with %q", got, c.want)
			}
		})
	}
}
