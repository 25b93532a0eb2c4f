package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/chromium"
	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/testing/harness"
)

// killTree SIGKILLs pid's process group and every process below it, found
// before anything is killed (a killed parent's children are re-parented and
// could no longer be found).
func killTree(pid int) {
	below := proctree.Descendants(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, p := range below {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// machine describes where the figures were taken.
type machine struct {
	cores     int
	cpu       string
	memGB     float64
	goVersion string
	chromium  string
	redis     string
	kernel    string
	loadStart string
	loadEnd   string
	busyStart float64 // CPU busy fraction before the run, while the benchmark idled
	busyEnd   float64 // and after it, everything stopped
}

func describeMachine(ctx context.Context) machine {
	m := machine{cores: runtime.NumCPU(), goVersion: runtime.Version(), loadStart: loadAvg()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "model name"); ok {
				m.cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %f kB", &kb); err == nil {
			m.memGB = kb / 1024 / 1024
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	path := os.Getenv("CHROMIUM_PATH")
	if path == "" {
		path, _ = chromium.Find()
	}
	if path != "" {
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := exec.CommandContext(vctx, path, "--version").Output()
		cancel()
		if err == nil {
			m.chromium = strings.TrimSpace(string(out))
		}
	}
	return m
}

// cpuBusy samples /proc/stat for d and returns the fraction of CPU time
// (all cores) that was not idle: how much other work was running while the
// benchmark itself did nothing.
func cpuBusy(ctx context.Context, d time.Duration) float64 {
	read := func() (busy, total float64, ok bool) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, 0, false
		}
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "cpu" {
			return 0, 0, false
		}
		for i, v := range f[1:] {
			x, _ := strconv.ParseFloat(v, 64)
			total += x
			if i != 3 && i != 4 { // idle, iowait
				busy += x
			}
		}
		return busy, total, true
	}
	b0, t0, ok0 := read()
	if sleepCtx(ctx, d) != nil {
		return math.NaN()
	}
	b1, t1, ok1 := read()
	if !ok0 || !ok1 || t1 <= t0 {
		return math.NaN()
	}
	return (b1 - b0) / (t1 - t0)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func (m machine) oneLine() string {
	return fmt.Sprintf("%d cores (%s), %.1f GB, %s, %s, load %s", m.cores, m.cpu, m.memGB, m.goVersion, m.chromium, m.loadStart)
}

// waitReady waits until url answers 200, failing early when p has exited.
func waitReady(ctx context.Context, url string, p *harness.Proc, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return harness.WaitHTTP(ctx, url, func() error {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited: %s", p.Name, p.Tail(3000))
		}
		return nil
	})
}
