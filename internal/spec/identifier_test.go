package spec

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestValidIdentifier_IsThePattern: the hand-written check accepts exactly
// what identifierPattern does, on edge cases and on random strings.
func TestValidIdentifier_IsThePattern(t *testing.T) {
	re := regexp.MustCompile(identifierPattern)
	cases := []string{"", "a", "A9", "9", ".a", "_a", "-a", "a.b_c-d", "a b", "a/b", "ä", "a\x00", strings.Repeat("a", 128), strings.Repeat("a", 129), "a..b"}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ09._-/ \x00é"
	for range 20000 {
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := validIdentifier(c), re.MatchString(c); got != want {
			t.Fatalf("validIdentifier(%q) = %v, the pattern says %v", c, got, want)
		}
	}
}
