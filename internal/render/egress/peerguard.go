package egress

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/pdfexport/pdfexport/internal/render/proctree"
)

// The egress proxy listens on loopback, where any local process could
// connect to it — a sidecar in the pod, another user on the host — and have
// the operator's or a user's credentials added to its requests. So the
// proxy serves only connections made by the processes the worker started:
// its Chromium and Chromium's children. For each new connection it finds
// the connecting socket in the kernel's socket table (by the two ends) and
// looks for that socket among the open files of those processes. A connection
// from anyone else is closed before a byte of it is read. This needs no
// secret in Chromium's command line and covers every request Chromium
// makes, from pages, frames, dedicated and service workers alike.

// errForeignPeer is the error of a connection from another process.
var errForeignPeer = errors.New("egress proxy: connection from a process other than the worker's browsers")

// The check is cheapest for the connections that matter, and bounded for
// the rest, so a local connection flood cannot slow the worker's renders:
//
//  1. The socket's owner, from the kernel's socket table (sock_diag, or
//     /proc/net/tcp): a uid other than the worker's (another user on the
//     host) is refused at once, no fd is read.
//  2. The processes that held the last admitted sockets (the browsers'
//     network processes, hotPIDs of them), while they are still the
//     worker's descendants: almost every admitted connection is found here,
//     in one process's fd table.
//  3. Every other descendant (a browser just started): at most
//     fullScanRate such scans a second (burst fullScanBurst); past that, a
//     connection that steps 1 and 2 did not admit is refused unread.
//
// No lock is held across a scan: concurrent checks scan concurrently, and
// a foreign connection's full scan never delays an admitted one.
const (
	hotPIDs       = 4
	fullScanRate  = 20 // per second
	fullScanBurst = 10
)

// errForeignUID refuses a socket of another user, unread and unscanned.
var errForeignUID = fmt.Errorf("%w: the connecting socket belongs to another user", errForeignPeer)

// errScanBudget refuses a connection the cheap checks did not admit while
// the full scans' budget is spent.
var errScanBudget = fmt.Errorf("%w: too many connections from unknown processes: refused without a full scan", errForeignPeer)

// PeerGuard admits connections from the worker's own child processes.
type PeerGuard struct {
	self     int           // the worker's pid: its descendants are admitted
	uid      int           // the worker's uid: a socket of another is refused unread
	treeTTL  time.Duration // how long a list of descendants is reused
	procRoot string        // "/proc"
	scans    *rate.Limiter // full scans of the descendants (step 3)

	treeMu    sync.Mutex // one refresh of the tree at a time; readers use the last one meanwhile
	tree      atomic.Pointer[procTree]
	hotMu     sync.Mutex
	hot       []int        // the processes that held the last admitted sockets, newest first
	fullScan  func()       // tests: called as a full scan (step 3) begins
	fullScans atomic.Int64 // checks that scanned every descendant (step 3)
}

// procTree is a list of the worker's descendants and when it was read.
type procTree struct {
	pids []int
	at   time.Time
}

func NewPeerGuard() *PeerGuard {
	return &PeerGuard{self: os.Getpid(), uid: os.Getuid(), treeTTL: time.Second, procRoot: "/proc",
		scans: rate.NewLimiter(fullScanRate, fullScanBurst)}
}

// Admits returns nil when the other end of c is a socket held by one of the
// worker's descendants.
func (g *PeerGuard) Admits(c net.Conn) error {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return fmt.Errorf("%w: not a TCP connection", errForeignPeer)
	}
	sock, err := g.socket(remote, local)
	if err != nil {
		return err
	}
	if sock.inode == "0" { // TIME_WAIT: closed already, no process holds it
		return fmt.Errorf("%w: the connecting socket is closed", errForeignPeer)
	}
	if sock.uid != g.uid {
		return fmt.Errorf("%w (uid %d)", errForeignUID, sock.uid)
	}
	link := "socket:[" + sock.inode + "]"
	began := time.Now()
	tree := g.descendants(time.Time{})
	hot := g.hotList()
	for _, pid := range hot {
		if slices.Contains(tree.pids, pid) && g.holds(pid, link) {
			return nil
		}
	}
	if !g.scans.Allow() {
		return errScanBudget
	}
	g.fullScans.Add(1)
	if g.fullScan != nil {
		g.fullScan()
	}
	scanned := map[int]bool{}
	for _, pid := range hot {
		scanned[pid] = true
	}
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			if !tree.at.Before(began) {
				break // the list already was as new as the connection
			}
			tree = g.descendants(began) // a process started since the list was read
		}
		for _, pid := range tree.pids {
			if scanned[pid] {
				continue
			}
			scanned[pid] = true
			if g.holds(pid, link) {
				g.remember(pid)
				return nil
			}
		}
	}
	return errForeignPeer
}

// descendants returns the worker's descendants: the last list read when it
// is younger than treeTTL, or for a list read after since (non-zero), one
// read no earlier. While another check reads it, a caller content with the
// last list uses that one rather than wait.
func (g *PeerGuard) descendants(since time.Time) *procTree {
	fresh := func(t *procTree) bool {
		return t != nil && (since.IsZero() && time.Since(t.at) <= g.treeTTL || !since.IsZero() && !t.at.Before(since))
	}
	t := g.tree.Load()
	if fresh(t) {
		return t
	}
	if since.IsZero() && t != nil {
		if !g.treeMu.TryLock() {
			return t
		}
	} else {
		g.treeMu.Lock()
	}
	defer g.treeMu.Unlock()
	if cur := g.tree.Load(); fresh(cur) {
		return cur // another check read it meanwhile
	}
	nt := &procTree{at: time.Now()}
	nt.pids = proctree.Descendants(g.self)
	g.tree.Store(nt)
	return nt
}

func (g *PeerGuard) hotList() []int {
	g.hotMu.Lock()
	defer g.hotMu.Unlock()
	return slices.Clone(g.hot)
}

// remember puts pid first among the processes looked at first.
func (g *PeerGuard) remember(pid int) {
	g.hotMu.Lock()
	defer g.hotMu.Unlock()
	g.hot = slices.DeleteFunc(g.hot, func(p int) bool { return p == pid })
	g.hot = append([]int{pid}, g.hot...)
	if len(g.hot) > hotPIDs {
		g.hot = g.hot[:hotPIDs]
	}
}

// holds reports whether process pid has the file link ("socket:[N]") open.
func (g *PeerGuard) holds(pid int, link string) bool {
	dir := g.procRoot + "/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == link {
			return true
		}
	}
	return false
}

// socketEntry is the connecting socket's row of /proc/net/tcp{,6}.
type socketEntry struct {
	inode string
	uid   int
}

// socket finds the socket whose local end is client and whose remote end
// is server (the connecting side of the connection): through sock_diag,
// or where that does not answer, in the socket table.
func (g *PeerGuard) socket(client, server *net.TCPAddr) (socketEntry, error) {
	if g.procRoot == "/proc" { // sock_diag answers for this host's kernel only
		e, err := sockDiag(client, server)
		if err == nil {
			return e, nil
		}
		// Not found: gone already (its process closed it), or in another
		// network namespace; unless sock_diag cannot see TCP sockets at
		// all, which the listener's own end of the connection tells.
		if errors.Is(err, errSocketNotFound) {
			if _, err := sockDiag(server, client); err == nil {
				return socketEntry{}, fmt.Errorf("%w: the connecting socket is not in this network namespace", errForeignPeer)
			}
		}
	}
	return g.socketFromTable(client, server)
}

// socketFromTable is socket read from /proc/net/tcp{,6}. The table is read
// whole and searched for the pair of addresses, which every row writes in
// fixed columns ("sl: local remote st …"): only the matching rows are split.
func (g *PeerGuard) socketFromTable(client, server *net.TCPAddr) (socketEntry, error) {
	table := "/net/tcp"
	if client.IP.To4() == nil {
		table = "/net/tcp6"
	}
	b, err := os.ReadFile(g.procRoot + table)
	if err != nil {
		return socketEntry{}, fmt.Errorf("%w: reading the socket table: %v", errForeignPeer, err)
	}
	pair := []byte(" " + hexAddr(client) + " " + hexAddr(server) + " ")
	for off := 0; ; {
		i := bytes.Index(b[off:], pair)
		if i < 0 {
			return socketEntry{}, fmt.Errorf("%w: the connecting socket is not in this network namespace's table", errForeignPeer)
		}
		i += off
		line := b[bytes.LastIndexByte(b[:i], '\n')+1:]
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		off = i + len(pair)
		fields := strings.Fields(string(line))
		if len(fields) < 10 {
			return socketEntry{}, fmt.Errorf("%w: a short row in the socket table", errForeignPeer)
		}
		if fields[9] == "0" {
			// A connection of the same pair in TIME_WAIT (the kernel may
			// reuse its ports): no process holds it.
			continue
		}
		uid, err := strconv.Atoi(fields[7])
		if err != nil {
			return socketEntry{}, fmt.Errorf("%w: the socket table's uid %q", errForeignPeer, fields[7])
		}
		return socketEntry{inode: fields[9], uid: uid}, nil
	}
}

// hexAddr is an address as /proc/net/tcp{,6} writes it: the IP's 32-bit
// words in host (little-endian) order, in upper-case hex, ":" the port.
func hexAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		ip = a.IP.To16()
	}
	var b strings.Builder
	for i := 0; i < len(ip); i += 4 {
		fmt.Fprintf(&b, "%02X%02X%02X%02X", ip[i+3], ip[i+2], ip[i+1], ip[i])
	}
	fmt.Fprintf(&b, ":%04X", a.Port)
	return b.String()
}

// guardedListener hands out connections that are checked on their first
// read, so a slow check never holds up the accept loop.
type guardedListener struct {
	net.Listener
	admit    func(net.Conn) error
	onRefuse func(remote string, err error)
}

func (l guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &guardedConn{Conn: c, l: l}, nil
}

type guardedConn struct {
	net.Conn
	l    guardedListener
	once sync.Once
	err  error
}

func (c *guardedConn) Read(b []byte) (int, error) {
	c.once.Do(func() {
		if c.err = c.l.admit(c.Conn); c.err != nil {
			if c.l.onRefuse != nil {
				c.l.onRefuse(c.RemoteAddr().String(), c.err)
			}
			_ = c.Conn.Close()
		}
	})
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(b)
}
