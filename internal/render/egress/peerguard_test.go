package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pdfexport/pdfexport/internal/testing/testsupport"
)

// The peer guard's tests need real processes on the other end: this test
// binary, started again in one of the helper modes below, as a child of
// the test (what the worker's browsers are), reparented away from it
// (another local process of the same user) or as another user.
const (
	peerHelperEnv = "EGRESS_PEER_HELPER"
	peerAddrEnv   = "EGRESS_PEER_ADDR"
	nobodyUID     = 65534
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(peerHelperEnv); mode != "" {
		os.Exit(peerHelper(mode, os.Getenv(peerAddrEnv)))
	}
	os.Exit(m.Run())
}

// peerHelper runs one helper mode against the guarded listener at addr:
//   - hold: connect once and keep the connection open;
//   - client: for every line on stdin, connect, wait for the listener's
//     byte of admission and answer "ok" (or why not) on stdout;
//   - flood: connect again and again from 4 goroutines.
//
// Every mode ends after a minute at the latest, whatever its parent does.
func peerHelper(mode, addr string) int {
	time.AfterFunc(time.Minute, func() { os.Exit(3) })
	switch mode {
	case "hold":
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return 1
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c) // until the listener closes it
		time.Sleep(time.Minute)
	case "client":
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				fmt.Println("fail", err)
				continue
			}
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			b := make([]byte, 1)
			_, err = io.ReadFull(c, b)
			c.Close()
			if err != nil {
				fmt.Println("fail", err)
			} else {
				fmt.Println("ok")
			}
		}
	case "flood":
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					c, err := net.DialTimeout("tcp", addr, time.Second)
					if err != nil {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
					_, _ = io.Copy(io.Discard, c)
					c.Close()
				}
			})
		}
		wg.Wait()
	}
	return 0
}

func helperEnv(mode, addr string) []string {
	return append(os.Environ(), peerHelperEnv+"="+mode, peerAddrEnv+"="+addr)
}

// peerKind is how a helper process relates to the test process.
type peerKind int

const (
	ownChild  peerKind = iota // a descendant, same user: one of "the worker's browsers"
	sameUser                  // reparented away: another local process of the same user
	otherUser                 // a descendant running as nobody: another user's process
)

// startPeer starts a helper of kind in mode; stop it by the returned pid
// (done in t.Cleanup). For mode "client", lines returns its answers and
// ask sends it a line.
func startPeer(t testing.TB, kind peerKind, mode, addr string) (pid int, ask func(), lines <-chan string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	switch kind {
	case sameUser:
		// sh starts it in the background and exits: it is reparented
		// away from this process, so it is no descendant of it.
		cmd := exec.Command("sh", "-c", `"$0" -test.run=^$ >/dev/null 2>&1 </dev/null & echo $!`, self)
		cmd.Env = helperEnv(mode, addr)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("helper pid %q: %v", out, err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		return pid, nil, nil
	default:
		if kind == otherUser {
			self = copyForEveryone(t, self)
		}
		cmd := exec.Command(self, "-test.run=^$")
		cmd.Env = helperEnv(mode, addr)
		if kind == otherUser {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
		}
		var in io.WriteCloser
		var answers chan string
		if mode == "client" {
			if in, err = cmd.StdinPipe(); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			answers = make(chan string, 16)
			go func() { // ends when the helper exits (its stdout closes)
				defer close(answers)
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					answers <- sc.Text()
				}
			}()
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if in != nil {
			ask = func() { _, _ = io.WriteString(in, "\n") }
		}
		return cmd.Process.Pid, ask, answers
	}
}

// copyForEveryone copies the executable path to a directory every user may
// read: the go tool builds test binaries in a private one.
func copyForEveryone(t testing.TB, path string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "egress-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := dir + "/helper"
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// acceptOne accepts the next connection on ln within 20 s.
func acceptOne(t testing.TB, ln net.Listener) net.Conn {
	t.Helper()
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(20 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// heldConn is the listener's end of a connection a helper of kind holds.
func heldConn(t testing.TB, kind peerKind) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	startPeer(t, kind, "hold", ln.Addr().String())
	return acceptOne(t, ln)
}

// TestPeerGuard_AdmitsOnlyTheWorkersOwnProcesses: a connection of a child
// is admitted; one of another process of the same user is refused after a
// scan; one of another user is refused from the socket table alone, even
// when that process is a child.
func TestPeerGuard_AdmitsOnlyTheWorkersOwnProcesses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     peerKind
		want     error // nil: admitted
		fullScan bool  // the check scanned every descendant
	}{
		{"own child", ownChild, nil, true},
		{"another process of the same user", sameUser, errForeignPeer, true},
		{"a child running as another user", otherUser, errForeignUID, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.kind == otherUser && os.Getuid() != 0 {
				t.Skip("starting a process as another user needs root")
			}
			c := heldConn(t, tc.kind)
			g := NewPeerGuard()
			err := g.Admits(c)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Admits = %v, want %v", err, tc.want)
			}
			if scanned := g.fullScans.Load() > 0; scanned != tc.fullScan {
				t.Errorf("full scans %d, want a full scan: %v", g.fullScans.Load(), tc.fullScan)
			}
		})
	}
}

// TestPeerGuard_FloodDoesNotStallOwnConnections: while local processes
// flood the guarded listener with connections, and the scans of those
// connections hang (parked here, as a slow /proc would keep them), the
// connections of the worker's own process are still admitted at once:
// no lock is held across a scan. The flood costs at most the scan budget:
// the rest of it is refused unscanned.
func TestPeerGuard_FloodDoesNotStallOwnConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var parking atomic.Bool
	var parked atomic.Int64
	release := make(chan struct{})
	g := NewPeerGuard()
	g.fullScan = func() {
		if parking.Load() {
			parked.Add(1)
			<-release
		}
	}
	var refusedUnscanned, refusedOtherUser atomic.Int64
	var admitMu sync.Mutex
	var admitMax time.Duration // the slowest check of an admitted connection
	var conns sync.WaitGroup
	serving := make(chan struct{})
	go func() { // the accept loop; it ends when ln closes
		defer close(serving)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				began := time.Now()
				err := g.Admits(c)
				switch {
				case err == nil:
					admitMu.Lock()
					admitMax = max(admitMax, time.Since(began))
					admitMu.Unlock()
					_, _ = c.Write([]byte{1})
				case errors.Is(err, errScanBudget):
					refusedUnscanned.Add(1)
				case errors.Is(err, errForeignUID):
					refusedOtherUser.Add(1)
				}
			})
		}
	}()
	t.Cleanup(func() {
		close(release)
		_ = ln.Close()
		<-serving
		conns.Wait()
	})
	addr := ln.Addr().String()

	_, ask, answers := startPeer(t, ownChild, "client", addr)
	roundTrip := func(within time.Duration) (time.Duration, error) {
		start := time.Now()
		ask()
		select {
		case a, ok := <-answers:
			if !ok || a != "ok" {
				return 0, fmt.Errorf("own connection refused: %q", a)
			}
			return time.Since(start), nil
		case <-time.After(within):
			return 0, fmt.Errorf("own connection not admitted within %v", within)
		}
	}
	if _, err := roundTrip(20 * time.Second); err != nil { // the child's first connection: a full scan
		t.Fatal(err)
	}

	parking.Store(true)
	floodStart := time.Now()
	startPeer(t, sameUser, "flood", addr)
	if os.Getuid() == 0 {
		startPeer(t, otherUser, "flood", addr)
	}
	testsupport.Eventually(t, 20*time.Second, func() error {
		return testsupport.Unless(parked.Load() > 0, "flood not under way: no foreign scan parked")
	})
	var slowest time.Duration
	for range 20 {
		d, err := roundTrip(5 * time.Second)
		if err != nil {
			t.Fatalf("%v while %d foreign scans hang (%d refused unscanned)", err, parked.Load(), refusedUnscanned.Load())
		}
		slowest = max(slowest, d)
	}
	testsupport.Eventually(t, 10*time.Second, func() error {
		return testsupport.Unless(refusedUnscanned.Load() > 0, "no foreign connection refused unscanned (%d scans parked)", parked.Load())
	})
	if budget := fullScanBurst + int64(time.Since(floodStart).Seconds()*fullScanRate) + 1; parked.Load() > budget {
		t.Errorf("%d full scans of foreign connections in %v, budget %d", parked.Load(), time.Since(floodStart), budget)
	}
	if os.Getuid() == 0 {
		testsupport.Eventually(t, 10*time.Second, func() error {
			return testsupport.Unless(refusedOtherUser.Load() > 0, "no connection of the other user refused")
		})
	}
	admitMu.Lock()
	defer admitMu.Unlock()
	t.Logf("own round trips: slowest %v (check %v); flood: %d scans parked, %d refused unscanned, %d of another user refused",
		slowest, admitMax, parked.Load(), refusedUnscanned.Load(), refusedOtherUser.Load())
}

// TestSockDiag_AgreesWithTheSocketTable: the exact lookup the guard makes
// finds the same owner and inode as /proc/net/tcp{,6} for both ends of a
// connection, IPv4 and IPv6, and shows a closed socket as held by nobody.
func TestSockDiag_AgreesWithTheSocketTable(t *testing.T) {
	for _, network := range []struct{ name, addr string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		t.Run(network.name, func(t *testing.T) {
			ln, err := net.Listen(network.name, network.addr)
			if err != nil {
				t.Skipf("no %s loopback: %v", network.name, err)
			}
			t.Cleanup(func() { _ = ln.Close() })
			client, err := net.Dial(network.name, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = client.Close() })
			server := acceptOne(t, ln)
			g := NewPeerGuard()
			for _, end := range []net.Conn{client, server} {
				local, remote := end.LocalAddr().(*net.TCPAddr), end.RemoteAddr().(*net.TCPAddr)
				diag, err := sockDiag(local, remote)
				if err != nil {
					t.Fatalf("sockDiag(%v, %v): %v", local, remote, err)
				}
				table, err := g.socketFromTable(local, remote)
				if err != nil {
					t.Fatal(err)
				}
				if diag != table || diag.uid != os.Getuid() || diag.inode == "0" {
					t.Errorf("%v → %v: sock_diag %+v, table %+v (uid %d)", local, remote, diag, table, os.Getuid())
				}
			}
			local, remote := client.LocalAddr().(*net.TCPAddr), client.RemoteAddr().(*net.TCPAddr)
			_ = client.Close()
			_ = server.Close()
			// The closing end lingers in TIME_WAIT, which no process holds.
			testsupport.Eventually(t, 5*time.Second, func() error {
				e, err := sockDiag(local, remote)
				if errors.Is(err, errSocketNotFound) || err == nil && e.inode == "0" {
					return nil
				}
				return fmt.Errorf("a closed socket: %+v, %v", e, err)
			})
		})
	}
}
