package render

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Linux capability numbers (linux/capability.h).
const (
	capSetpcap = 8
	capSysNice = 23
)

// niceCommand is how a browser of Config.Nice > 0 starts: nice(1), and in
// front of it, where the worker holds CAP_SYS_NICE (as root), setpriv(1)
// dropping that capability. Chromium sets each of its threads' nice value
// itself, to absolute values by the thread's kind (its display threads
// below 0, most others at 0); a process without CAP_SYS_NICE cannot lower
// a nice value, so those calls fail and every thread keeps the one nice(1)
// gave. With the capability they succeed, and a "niced" browser would run
// most of its threads at the priority of the browser it should yield to.
type niceCommand struct {
	nice    string   // nice(1)
	setpriv []string // setpriv(1) and its arguments, or none
}

func findNiceCommand() (niceCommand, error) {
	var c niceCommand
	p, err := exec.LookPath("nice")
	if err != nil {
		return c, err
	}
	c.nice = p
	eff, err := effectiveCaps()
	if err != nil {
		return c, fmt.Errorf("reading the worker's capabilities: %w", err)
	}
	if eff&(1<<capSysNice) == 0 {
		return c, nil
	}
	sp, err := exec.LookPath("setpriv")
	if err != nil {
		return c, fmt.Errorf("the worker holds CAP_SYS_NICE (it runs as root, or was given it), with which Chromium raises its own threads' priorities back; setpriv(1) (util-linux) is needed to start it without: %w", err)
	}
	// Dropping from the inheritable set also drops an ambient capability
	// (a non-root worker given CAP_SYS_NICE); root's programs get their
	// capabilities from the bounding set, which only CAP_SETPCAP changes.
	c.setpriv = []string{sp, "--inh-caps=-sys_nice"}
	if eff&(1<<capSetpcap) != 0 {
		c.setpriv = append(c.setpriv, "--bounding-set=-sys_nice")
	}
	c.setpriv = append(c.setpriv, "--")
	return c, nil
}

// wrap returns the command line that starts argv (the browser and its
// arguments) at nice n.
func (c niceCommand) wrap(n int, argv []string) []string {
	out := append([]string{}, c.setpriv...)
	out = append(out, c.nice, "-n", strconv.Itoa(n))
	return append(out, argv...)
}

// effectiveCaps is this process's effective capability set (CapEff of
// /proc/self/status).
func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	if err := lines.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no CapEff line in /proc/self/status")
}
