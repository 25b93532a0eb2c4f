package testsupport

import (
	"fmt"
	"testing"
	"time"
)

// PollInterval is how often Eventually asks again.
const PollInterval = 10 * time.Millisecond

// Eventually calls check every PollInterval until it returns nil. When it
// still returns an error after limit, the test fails with that last error:
// check should say what it waits for and what it saw, as the message is
// all a reader of a failed run gets.
func Eventually(t testing.TB, limit time.Duration, check func() error) {
	t.Helper()
	if err := Within(limit, check); err != nil {
		t.Fatalf("not within %v: %v", limit, err)
	}
}

// Within is Eventually for a caller that reports a failure itself (with a
// goroutine dump, say, or as a non-fatal error): it returns nil once check
// does, else check's last error after limit.
func Within(limit time.Duration, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(PollInterval)
	}
}

// Unless is nil when ok holds, else the formatted error: the usual body of
// an Eventually check, as in
//
//	testsupport.Eventually(t, 5*time.Second, func() error {
//		n := count()
//		return testsupport.Unless(n == 2, "%d subscribers, want 2", n)
//	})
func Unless(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}
