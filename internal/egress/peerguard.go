package egress

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pdfexport/pdfexport/internal/proctree"
)

// The egress proxy listens on loopback, where any local process could
// connect to it — a sidecar in the pod, another user on the host — and have
// the operator's or a user's credentials added to its requests. So the
// proxy serves only connections made by the processes the worker started:
// its Chromium and Chromium's children. For each new connection it finds
// the connecting socket in /proc/net/tcp (by the two ends' ports) and looks
// for that socket among the open files of those processes. A connection
// from anyone else is closed before a byte of it is read. This needs no
// secret in Chromium's command line and covers every request Chromium
// makes, from pages, frames, dedicated and service workers alike.

// errForeignPeer is the error of a connection from another process.
var errForeignPeer = errors.New("egress proxy: connection from a process other than the worker's browsers")

// PeerGuard admits connections from the worker's own child processes.
type PeerGuard struct {
	self     int           // the worker's pid: its descendants are admitted
	treeTTL  time.Duration // how long a list of descendants is reused
	procRoot string        // "/proc"

	mu      sync.Mutex
	tree    []int
	treeAt  time.Time
	lastPID int // the process whose socket matched last: looked at first
}

func NewPeerGuard() *PeerGuard {
	return &PeerGuard{self: os.Getpid(), treeTTL: time.Second, procRoot: "/proc"}
}

// admits returns nil when the other end of c is a socket held by one of the
// worker's descendants.
func (g *PeerGuard) Admits(c net.Conn) error {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return fmt.Errorf("%w: not a TCP connection", errForeignPeer)
	}
	inode, err := g.socketInode(remote, local)
	if err != nil {
		return err
	}
	link := "socket:[" + inode + "]"
	g.mu.Lock()
	defer g.mu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 || g.tree == nil || time.Since(g.treeAt) > g.treeTTL {
			g.tree, g.treeAt = proctree.Descendants(g.self), time.Now()
		}
		if g.lastPID != 0 && slices.Contains(g.tree, g.lastPID) && g.holds(g.lastPID, link) {
			return nil
		}
		for _, pid := range g.tree {
			if pid != g.lastPID && g.holds(pid, link) {
				g.lastPID = pid
				return nil
			}
		}
	}
	return errForeignPeer
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

// socketInode finds the inode of the socket whose local end is client and
// whose remote end is server (the connecting side of the connection).
func (g *PeerGuard) socketInode(client, server *net.TCPAddr) (string, error) {
	table, want := "/net/tcp", hexAddr(client)
	if client.IP.To4() == nil {
		table = "/net/tcp6"
	}
	peer := hexAddr(server)
	f, err := os.Open(g.procRoot + table)
	if err != nil {
		return "", fmt.Errorf("%w: reading the socket table: %v", errForeignPeer, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 10 && fields[1] == want && fields[2] == peer {
			return fields[9], nil
		}
	}
	return "", fmt.Errorf("%w: the connecting socket is not in this network namespace's table", errForeignPeer)
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
