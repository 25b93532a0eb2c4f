package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// The peer guard asks the kernel for one socket's owner and inode through
// sock_diag (NETLINK_SOCK_DIAG, the interface ss(8) uses), by the
// connection's two ends: an exact lookup, whatever the number of sockets
// on the host. /proc/net/tcp holds the same rows, but each read makes the
// kernel print the whole table, which a connection flood makes both long
// (its TIME_WAIT rows) and read once per connection: the guard falls back
// to it only where sock_diag does not answer.

// Linux uapi constants (linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h).
const (
	netlinkSockDiag  = 4
	sockDiagByFamily = 20
	nlmsgError       = 2
	nlmFRequest      = 1
	nlmsgHdrLen      = 16
	inetDiagReqLen   = 56 // struct inet_diag_req_v2
	inetDiagMsgLen   = 72 // struct inet_diag_msg
)

// errNoSockDiag: sock_diag did not answer (not built, not allowed); the
// caller reads the socket table instead.
var errNoSockDiag = errors.New("sock_diag unavailable")

// errSocketNotFound: sock_diag answered that no socket has these two ends.
var errSocketNotFound = errors.New("no such socket")

// sockDiag looks up the TCP socket whose local end is local and remote end
// remote, and returns its owner's uid and its inode.
func sockDiag(local, remote *net.TCPAddr) (socketEntry, error) {
	family, l4, r4 := syscall.AF_INET, local.IP.To4(), remote.IP.To4()
	if l4 == nil || r4 == nil {
		family = syscall.AF_INET6
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
	if err != nil {
		return socketEntry{}, fmt.Errorf("%w: %v", errNoSockDiag, err)
	}
	defer syscall.Close(fd)
	tv := syscall.Timeval{Sec: 1}
	_ = syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)

	req := make([]byte, nlmsgHdrLen+inetDiagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], nlmFRequest) // no NLM_F_DUMP: an exact lookup
	ne.PutUint32(req[8:], 1)           // sequence number
	r := req[nlmsgHdrLen:]
	r[0], r[1] = byte(family), syscall.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]                     // struct inet_diag_sockid
	binary.BigEndian.PutUint16(id[0:], uint16(local.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(remote.Port))
	if family == syscall.AF_INET {
		copy(id[4:8], l4)
		copy(id[20:24], r4)
	} else {
		copy(id[4:20], local.IP.To16())
		copy(id[20:36], remote.IP.To16())
	}
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	if err := syscall.Sendto(fd, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return socketEntry{}, fmt.Errorf("%w: %v", errNoSockDiag, err)
	}
	buf := make([]byte, 8192)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return socketEntry{}, fmt.Errorf("%w: %v", errNoSockDiag, err)
	}
	msg := buf[:n]
	if len(msg) < nlmsgHdrLen {
		return socketEntry{}, fmt.Errorf("%w: a short answer", errNoSockDiag)
	}
	switch ne.Uint16(msg[4:]) {
	case nlmsgError:
		if len(msg) >= nlmsgHdrLen+4 && syscall.Errno(-int32(ne.Uint32(msg[nlmsgHdrLen:]))) == syscall.ENOENT {
			// No such socket, or no handler for TCP (tcp_diag not loaded):
			// the table tells the two apart.
			return socketEntry{}, fmt.Errorf("%w: %w", errNoSockDiag, errSocketNotFound)
		}
		return socketEntry{}, fmt.Errorf("%w: error answer", errNoSockDiag)
	case sockDiagByFamily:
	default:
		return socketEntry{}, fmt.Errorf("%w: answer of type %d", errNoSockDiag, ne.Uint16(msg[4:]))
	}
	m := msg[nlmsgHdrLen:]
	if len(m) < inetDiagMsgLen {
		return socketEntry{}, fmt.Errorf("%w: a short answer", errNoSockDiag)
	}
	return socketEntry{uid: int(ne.Uint32(m[64:])), inode: strconv.FormatUint(uint64(ne.Uint32(m[68:])), 10)}, nil
}
