package testsupport

import (
	"testing"
	"time"
)

// Eventually polls cond every 20 ms until it holds, and fails the test when
// it still does not after limit.
func Eventually(t testing.TB, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
