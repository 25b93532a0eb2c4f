package main

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/proctree"
)

// TestTreeMeter_KeepsTheTimeOfAnOrphanedGrandchild: a browser killed
// mid-row leaves its renderers orphaned, out of the tree and out of
// anyone's cutime. The meter keeps what it saw of them; the tree's
// reading before and after loses it.
func TestTreeMeter_KeepsTheTimeOfAnOrphanedGrandchild(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	cmd := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & echo $!; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	_, before := proctree.CPU(os.Getpid())
	m := startTreeMeter(os.Getpid(), 20*time.Millisecond)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	busy, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(busy, syscall.SIGKILL) })
	const spent = 300 * time.Millisecond
	deadline := time.Now().Add(30 * time.Second)
	for statCPU(busy, false) < spent {
		if time.Now().After(deadline) {
			t.Fatalf("the busy grandchild used %s of CPU in 30 s", statCPU(busy, false))
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // sampled by the meter once more
	// Its parent killed: the grandchild is orphaned, out of the tree.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	_ = syscall.Kill(busy, syscall.SIGKILL)
	got := m.seconds()
	_, after := proctree.CPU(os.Getpid())
	lost := (after - before).Seconds()
	if got < spent.Seconds()-0.05 {
		t.Fatalf("meter: %.3f CPU-s, want at least the grandchild's %.3f", got, spent.Seconds())
	}
	if got < lost+0.2 {
		t.Fatalf("meter %.3f CPU-s against the tree's reading %.3f: the orphan's time should be in the first only", got, lost)
	}
}
