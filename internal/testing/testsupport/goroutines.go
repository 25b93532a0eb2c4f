package testsupport

import (
	"runtime"
	"strings"
)

// Goroutines counts the goroutines whose stacks name fn (for example
// "subscription.(*Subscription)"): what a Close must leave at its count
// before the start.
func Goroutines(fn string) int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), fn)
}
