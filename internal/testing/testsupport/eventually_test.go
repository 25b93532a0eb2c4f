package testsupport

import (
	"errors"
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	calls := 0
	if err := Within(time.Second, func() error {
		calls++
		return Unless(calls == 3, "call %d", calls)
	}); err != nil || calls != 3 {
		t.Errorf("Within = %v after %d calls, want nil after 3", err, calls)
	}
	start := time.Now()
	err := Within(50*time.Millisecond, func() error { return errors.New("never") })
	if err == nil || err.Error() != "never" {
		t.Errorf("Within of a check that never holds = %v, want its last error", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond || waited > time.Second {
		t.Errorf("Within gave up after %v, want about its 50ms limit", waited)
	}
}
