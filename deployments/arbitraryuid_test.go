package deployments

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	chownRE   = regexp.MustCompile(`chown -R \S+ ((?:/\S+ ?)+)`)
	homeRE    = regexp.MustCompile(`useradd [^&]*--home-dir (/\S+)`)
	chgrp0RE  = regexp.MustCompile(`chgrp -R 0 ((?:/\S+ ?)+)`)
	chmodGURE = regexp.MustCompile(`chmod -R g=u ((?:/\S+ ?)+)`)
)

// groupZeroGaps returns the folders the image's user owns (its home, what it
// chowns) that are not also given to group 0 with the owner's rights, the
// OpenShift way: a container run as an arbitrary uid in group 0 could not
// write them.
func groupZeroGaps(dockerfile string) []string {
	collect := func(re *regexp.Regexp, s string) []string {
		var out []string
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			out = append(out, strings.Fields(m[1])...)
		}
		return out
	}
	var owned, chgrp, chmod []string
	for _, in := range parseDockerfile(dockerfile) {
		if in.Cmd != "RUN" {
			continue
		}
		owned = append(owned, collect(chownRE, in.Args)...)
		owned = append(owned, collect(homeRE, in.Args)...)
		chgrp = append(chgrp, collect(chgrp0RE, in.Args)...)
		chmod = append(chmod, collect(chmodGURE, in.Args)...)
	}
	var gaps []string
	for _, d := range owned {
		if !slices.Contains(chgrp, d) || !slices.Contains(chmod, d) {
			gaps = append(gaps, d)
		}
	}
	return gaps
}

// TestDockerfile_ArbitraryUID: Gotenberg's image runs under any uid in group
// 0 (OpenShift, docker run --user 12345:0); so must this one, whose store
// was 10001's alone and refused such a container's first render.
func TestDockerfile_ArbitraryUID(t *testing.T) {
	cases := []struct {
		name, dockerfile string
		want             []string
	}{
		{"owner only", "RUN useradd --uid 1 --home-dir /home/u u && mkdir /s && chown -R u /s\n", []string{"/s", "/home/u"}},
		{"group 0 too", "RUN useradd --uid 1 --home-dir /home/u u && chown -R u /s \\\n && chgrp -R 0 /s /home/u && chmod -R g=u /s /home/u\n", nil},
		{"chgrp without chmod", "RUN chown -R u /s && chgrp -R 0 /s\n", []string{"/s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := groupZeroGaps(c.dockerfile); !slices.Equal(got, c.want) {
				t.Errorf("groupZeroGaps = %q, want %q", got, c.want)
			}
		})
	}
	t.Run("deployments/Dockerfile", func(t *testing.T) {
		raw, err := os.ReadFile("Dockerfile")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "chown -R") {
			t.Fatal("Dockerfile: no chown -R of the user's folders")
		}
		if gaps := groupZeroGaps(string(raw)); gaps != nil {
			t.Errorf("Dockerfile: %v belong to the image's user only: chgrp -R 0 and chmod -R g=u them too", gaps)
		}
	})
}
