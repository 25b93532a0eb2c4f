package egress

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/render/proctree"
	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// cpuTime is the CPU time this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startBrowserTree starts a headless Chromium below this process, so the
// guard scans what it scans in a worker: a browser's processes and their
// open files.
func startBrowserTree(b *testing.B) {
	b.Helper()
	cmd := exec.Command(testsupport.ChromiumPath(b), "--headless", "--no-sandbox", "--disable-gpu",
		"--remote-debugging-port=0", "--user-data-dir="+b.TempDir(), "about:blank")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	testsupport.Eventually(b, 20*time.Second, func() error {
		n := len(proctree.Descendants(os.Getpid()))
		return testsupport.Unless(n >= 4, "Chromium started %d processes", n)
	})
}

// BenchmarkPeerGuard measures one check of a connection to the egress
// proxy, below a running Chromium: of the worker's own process, of another
// process of the same user and of another user (refused), and of its own
// process while two goroutines keep checking a foreign one (a local
// connection flood).
func BenchmarkPeerGuard(b *testing.B) {
	startBrowserTree(b)
	kinds := []struct {
		name string
		kind peerKind
	}{{"own", ownChild}, {"same-user", sameUser}, {"other-user", otherUser}}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			if k.kind == otherUser && os.Getuid() != 0 {
				b.Skip("starting a process as another user needs root")
			}
			c := heldConn(b, k.kind)
			g := NewPeerGuard()
			_ = g.Admits(c) // the own process becomes the one looked at first
			cpu := cpuTime()
			for b.Loop() {
				_ = g.Admits(c)
			}
			// CPU per check: on a loaded machine the wall time is mostly
			// waiting for a core.
			b.ReportMetric(float64((cpuTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
	b.Run("own-during-flood", func(b *testing.B) {
		own, foreign := heldConn(b, ownChild), heldConn(b, sameUser)
		g := NewPeerGuard()
		if err := g.Admits(own); err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		var flood sync.WaitGroup
		for range 2 {
			flood.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						_ = g.Admits(foreign)
					}
				}
			})
		}
		b.Cleanup(func() { close(stop); flood.Wait() })
		var slowest time.Duration
		for b.Loop() {
			start := time.Now()
			if err := g.Admits(own); err != nil {
				b.Fatal(err)
			}
			slowest = max(slowest, time.Since(start))
		}
		b.ReportMetric(float64(slowest.Microseconds()), "slowest-µs")
	})
}
