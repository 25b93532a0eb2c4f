package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pdfexport/pdfexport/internal/chromium"
	"github.com/pdfexport/pdfexport/internal/harness"
	"github.com/pdfexport/pdfexport/internal/proctree"
)

// proc is a child process in its own process group, so that stopping it also
// stops what it started (Chromium below a worker).
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startProc starts bin with args and env (added to os.Environ) in its own
// process group, its output going to logPath.
func startProc(name, logPath, bin string, env []string, args ...string) (*proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() { _ = cmd.Wait(); logFile.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs
// the group. It reports whether the process ended on SIGTERM with status 0.
func (p *proc) stop(grace time.Duration) bool {
	if p.exited() {
		return p.cmd.ProcessState != nil && p.cmd.ProcessState.ExitCode() == 0
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode() == 0
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return false
	}
}

// tail returns the last n bytes of the process log, for error messages.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// redisServer is a private redis-server without persistence.
type redisServer struct {
	p       *proc
	addr    string
	version string
}

func startRedis(ctx context.Context, dir string) (*redisServer, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server not found: run `make setup` (apt-get install redis-server)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := startProc("redis-server", filepath.Join(dir, "redis.log"), "redis-server", nil,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
		"--databases", "32")
	if err != nil {
		return nil, err
	}
	r := &redisServer{p: p, addr: addr}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) || p.exited() {
			r.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer: %v\n%s", addr, err, p.tail(2000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if info, err := c.Info(ctx, "server").Result(); err == nil {
		if m := regexp.MustCompile(`redis_version:(\S+)`).FindStringSubmatch(info); m != nil {
			r.version = m[1]
		}
	}
	return r, nil
}

func (r *redisServer) stop() { r.p.stop(5 * time.Second) }

// url of database db (each fleet gets its own database, so fleets never take
// each other's tasks).
func (r *redisServer) url(db int) string { return fmt.Sprintf("redis://%s/%d", r.addr, db) }

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
func waitReady(ctx context.Context, url string, p *proc, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return harness.WaitHTTP(ctx, url, func() error {
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited: %s", p.name, p.tail(3000))
		}
		return nil
	})
}
