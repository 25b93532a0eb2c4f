// Package proctree reads the Linux process table (/proc) to find what a
// process started — Chromium and its helpers below a worker, servers below a
// benchmark — so tests can prove nothing was left behind and harnesses can
// stop everything they started. It reads only; it never signals.
package proctree

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// Proc is one entry of the process table.
type Proc struct {
	PID, PPID int
	PGID      int    // process group
	State     string // R, S, D, Z, T, …
	Comm      string
	StartTime string // clock ticks after boot; tells a reused PID from the original
}

// Stat reads /proc/PID/stat.
func Stat(pid int) (Proc, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, false
	}
	open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return Proc{}, false
	}
	f := strings.Fields(string(b[closing+1:]))
	if len(f) < 20 {
		return Proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	return Proc{PID: pid, PPID: ppid, PGID: pgid, State: f[0], Comm: string(b[open+1 : closing]), StartTime: f[19]}, true
}

// Live lists every live (not zombie, not dead) process on the machine.
func Live() []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := Stat(pid); ok && p.State != "Z" && p.State != "X" {
			out = append(out, p)
		}
	}
	return out
}

// Cmdline returns a process's arguments, or nil when it is gone.
func Cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// Descendants lists the live (non-zombie) processes below any of roots,
// breadth first.
func Descendants(roots ...int) []int {
	children := map[int][]int{}
	for _, p := range Live() {
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	var out []int
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// Alive returns those of pids that still run (zombies count as gone).
func Alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if p, ok := Stat(pid); ok && p.State != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// CPU returns the CPU time, user and system, that process pid has used
// (own) and that it and all its descendants have used (tree): those alive,
// and those already reaped, whose times the kernel adds to their parent's
// cutime and cstime. A process that is gone counts as zero. Chromium's
// renderers live for one page and are reaped by its zygote, so tree is the
// whole browser's cost.
func CPU(pid int) (own, tree time.Duration) {
	own, _ = cpuOf(pid, false)
	for _, p := range append([]int{pid}, Descendants(pid)...) {
		t, _ := cpuOf(p, true)
		tree += t
	}
	return own, tree
}

// cpuOf reads utime+stime (and cutime+cstime with children) of pid.
func cpuOf(pid int, children bool) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	closing := bytes.LastIndexByte(b, ')')
	if closing < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[closing+1:]))
	if len(f) < 15 {
		return 0, false
	}
	fields := []int{11, 12} // utime stime (fields 14, 15 of stat)
	if children {
		fields = append(fields, 13, 14) // cutime cstime
	}
	var ticks int64
	for _, i := range fields {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}
