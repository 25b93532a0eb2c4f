package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Proc is a child process in its own process group, so that stopping it
// also stops what it started (Chromium below a worker), and tied to the
// test process (StartTied), so that it dies with a test binary that times
// out or is killed. Its output goes to a
// log file, or to memory when no log file is named.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	log  string      // log file, "" when the output is in out
	out  *SyncBuffer // the output when there is no log file
	done chan struct{}
	err  error // Wait's error, set before done closes
}

// Start runs bin with args and exactly the environment env (nil: none, so
// pass os.Environ() plus additions to inherit) in a new process group. With
// logPath, stdout and stderr go to that file; otherwise Output holds them.
func Start(name, logPath, bin string, env []string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, log: logPath, done: make(chan struct{})}
	var w io.Writer
	var logFile *os.File
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return nil, fmt.Errorf("%s: log file: %w", name, err)
		}
		logFile, w = f, f
	} else {
		p.out = &SyncBuffer{}
		w = p.out
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = w, w
	exited, err := StartTied(p.cmd)
	if err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	go func() {
		p.err = <-exited
		if logFile != nil {
			logFile.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// PID is the process id (also its process group id).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the exit error after Done (nil for status 0).
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// ExitCode is the exit status after Done, -1 when a signal ended it.
func (p *Proc) ExitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// Signal sends sig to the process alone, not its group.
func (p *Proc) Signal(sig syscall.Signal) { _ = syscall.Kill(p.PID(), sig) }

// Kill SIGKILLs the whole process group and waits for the process.
func (p *Proc) Kill() {
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	<-p.done
}

// ErrStopTimeout: the process did not exit within the grace period of Stop.
var ErrStopTimeout = errors.New("did not exit in time")

// Stop asks the process to stop (SIGCONT, in case it is paused, then
// SIGTERM to the process alone, so that it stops its own children in
// order), waits up to grace, and SIGKILLs the group if it is still running
// then. It returns nil for a clean exit (status 0 within grace),
// ErrStopTimeout, or the exit error. Children that outlive a clean exit are
// left for the caller to find (a leak check); Kill removes them.
func (p *Proc) Stop(grace time.Duration) error {
	if !p.Exited() {
		p.Signal(syscall.SIGCONT)
		p.Signal(syscall.SIGTERM)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.err
	case <-t.C:
		p.Kill()
		return fmt.Errorf("%s: %w (%v)", p.Name, ErrStopTimeout, grace)
	}
}

// Output is everything the process wrote so far (its log file's content).
func (p *Proc) Output() string {
	if p.out != nil {
		return p.out.String()
	}
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Tail is the last n bytes of Output, marked with "…" when cut.
func (p *Proc) Tail(n int) string {
	s := p.Output()
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// LogPath is the log file, "" when the output is kept in memory.
func (p *Proc) LogPath() string { return p.log }
