package harness

import (
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// ErrShort is StartTied's refusal inside a test binary run with -short,
// which starts no server, browser or built binary: a test that needs one
// skips under -short (testsupport.SkipShort) before it gets here.
var ErrShort = errors.New("go test -short starts no process of the harness; skip the test under -short")

// StartTied starts cmd in a process group of its own, tied to the test
// process: Linux kills it (SIGKILL, Pdeathsig) when the test process dies,
// however it dies (a -timeout panic, a SIGKILL, a crash), so no server a
// test started outlives its test binary. The returned channel yields
// cmd.Wait's error once the process has exited and been reaped.
//
// Pdeathsig fires when the thread that forked the child exits, not the
// process, and Go may end an idle thread; so the fork and the wait run on
// one goroutine locked to its thread, which lives exactly as long as the
// child. A child's own children are its to tie (the worker ties its
// Chromium the same way); a process group kill (Proc.Kill) reaches them
// too.
func StartTied(cmd *exec.Cmd) (<-chan error, error) {
	if testing.Testing() && flag.Parsed() && testing.Short() {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, ErrShort)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: a goroutine that exits locked takes its thread
		// with it, which is what a thread that was a child's parent
		// should not outlive anyway.
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}
