package proctree

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestDescendantsAndAlive(t *testing.T) {
	// sh starts a sleep: both are below this process; after a kill, neither is alive.
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var below []int
	deadline := time.Now().Add(5 * time.Second)
	for len(below) < 2 {
		below = Descendants(os.Getpid())
		if time.Now().After(deadline) {
			t.Fatalf("descendants %v: want sh and sleep", below)
		}
		time.Sleep(10 * time.Millisecond)
	}
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
	deadline = time.Now().Add(5 * time.Second)
	for len(Alive(below)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still alive after SIGKILL: %v", Alive(below))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
