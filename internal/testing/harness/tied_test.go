package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes this test binary, run again by TestStartTied_ChildDiesWithTestBinary,
// the test process that starts a redis-server and then dies.
const childEnv = "HARNESS_TIED_CHILD"

// TestTiedChild is the child's part: it starts redis-server, prints its
// pid and blocks until its test binary dies (by -test.timeout or a kill).
func TestTiedChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestStartTied_ChildDiesWithTestBinary")
	}
	r, err := StartRedis(context.Background(), t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("redis-pid %d\n", r.Proc.PID())
	select {} // until the test binary dies
}

// TestStartTied_ChildDiesWithTestBinary: a redis-server the harness started
// dies with its test binary, whether the binary times out (go test's
// -timeout panic) or is killed with SIGKILL, which leaves no cleanup to
// run.
func TestStartTied_ChildDiesWithTestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts redis-server")
	}
	tests := []struct {
		name string
		args []string
		kill bool
	}{
		{"timeout", []string{"-test.timeout=3s"}, false},
		{"SIGKILL", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestTiedChild$", "-test.count=1"}, tt.args...)...)
			// The child dies without its cleanup: its temporary
			// directories go under this test's, which this test removes.
			cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+t.TempDir())
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr SyncBuffer // the timeout's panic, shown on failure only
			cmd.Stderr = &stderr
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("the child's stderr:\n%s", stderr.String())
				}
			})
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			pid := 0
			lines := bufio.NewScanner(out)
			for pid == 0 && lines.Scan() {
				if rest, ok := strings.CutPrefix(lines.Text(), "redis-pid "); ok {
					if pid, err = strconv.Atoi(rest); err != nil {
						t.Fatal(err)
					}
				}
			}
			if pid == 0 {
				t.Fatal("the child printed no redis-server pid")
			}
			// Kill what is left in the end, should the test fail.
			t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
			if !alive(pid) {
				t.Fatalf("redis-server %d is not running while its test binary is", pid)
			}
			if tt.kill {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			go func() { _, _ = bufio.NewReader(out).WriteTo(nopWriter{}) }()
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err := <-waited:
				if err == nil {
					t.Fatal("the child test binary exited 0; it should have died")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the child test binary did not die")
			}
			deadline := time.Now().Add(5 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("redis-server %d still runs after its test binary died", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting for a reaper counts as gone).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name's closing parenthesis.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestStartTied_RefusedUnderShort: under -short the harness starts nothing,
// so a test that forgot to skip fails instead of starting a server.
func TestStartTied_RefusedUnderShort(t *testing.T) {
	if !testing.Short() {
		t.Skip("the refusal is -short's")
	}
	_, err := StartTied(exec.Command("true"))
	if !errors.Is(err, ErrShort) {
		t.Fatalf("StartTied under -short = %v, want ErrShort", err)
	}
}
