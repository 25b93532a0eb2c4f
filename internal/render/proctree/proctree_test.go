package proctree

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

func TestDescendantsAndAlive(t *testing.T) {
	// sh starts a sleep: both are below this process; after a kill, neither is alive.
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var below []int
	testsupport.Eventually(t, 5*time.Second, func() error {
		below = Descendants(os.Getpid())
		return testsupport.Unless(len(below) >= 2, "descendants %v: want sh and sleep", below)
	})
	if !slices.Contains(below, cmd.Process.Pid) {
		t.Fatalf("descendants %v lack the direct child %d", below, cmd.Process.Pid)
	}
	if p, ok := Stat(cmd.Process.Pid); !ok || p.PPID != os.Getpid() || p.Comm != "sh" {
		t.Fatalf("Stat = %+v, %v", p, ok)
	}
	for _, pid := range below {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = cmd.Wait()
	testsupport.Eventually(t, 5*time.Second, func() error {
		alive := Alive(below)
		return testsupport.Unless(len(alive) == 0, "still alive after SIGKILL: %v", alive)
	})
}

// TestCPU_CountsReapedDescendants: a subshell that burns CPU and exits is
// reaped by its parent sh; CPU of sh's tree still holds what it burned,
// and sh's own time does not.
func TestCPU_CountsReapedDescendants(t *testing.T) {
	// A fixed amount of work (about 0.4 CPU-s), not a time: on a busy
	// machine a loop bounded by the clock gets too little of a core.
	cmd := exec.Command("sh", "-c", `(i=0; while [ $i -lt 600000 ]; do i=$((i+1)); done); echo done; sleep 30`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf[:4]) != "done" {
		t.Fatalf("the subshell did not finish: %q, %v", buf, err)
	}
	own, tree := CPU(cmd.Process.Pid)
	t.Logf("sh: own %v, tree %v", own, tree)
	if tree < 200*time.Millisecond {
		t.Errorf("tree CPU %v: the reaped subshell's work is missing", tree)
	}
	if own >= tree/2 {
		t.Errorf("own CPU %v is not sh's alone (tree %v)", own, tree)
	}
	if o, tr := CPU(1 << 30); o != 0 || tr != 0 {
		t.Errorf("CPU of a missing process = %v, %v; want 0", o, tr)
	}
}
