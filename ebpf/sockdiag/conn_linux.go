package sockdiag

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/ebpf/netns"
)

// recvBufSize holds many inet_diag messages per read; the kernel fills it
// up to its own dump chunk size.
const recvBufSize = 32 << 10

// Conn is a NETLINK_SOCK_DIAG socket. A netlink socket answers for the
// network namespace it was created in, even when used from another one.
type Conn struct {
	fd  int
	seq uint32
	buf []byte
}

// Open returns a Conn for the caller's network namespace.
func Open() (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, os.NewSyscallError("socket(NETLINK_SOCK_DIAG)", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind(NETLINK_SOCK_DIAG)", err)
	}
	return &Conn{fd: fd, buf: make([]byte, recvBufSize)}, nil
}

// OpenIn returns a Conn for the network namespace at nsPath. Entering it
// needs CAP_SYS_ADMIN.
func OpenIn(nsPath string) (*Conn, error) {
	var c *Conn
	err := netns.Do(nsPath, func() error {
		var err error
		c, err = Open()
		return err
	})
	return c, err
}

// ListenersIn dumps the TCP listeners of the network namespace at nsPath.
func ListenersIn(nsPath string) ([]Socket, error) {
	c, err := OpenIn(nsPath)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.TCP(1 << StateListen)
}

// Close releases the netlink socket.
func (c *Conn) Close() error { return unix.Close(c.fd) }

// TCP dumps the IPv4 and IPv6 TCP sockets whose state is in the bitmask
// states (1<<StateListen, ...).
func (c *Conn) TCP(states uint32) ([]Socket, error) {
	var out []Socket
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		var err error
		if out, err = c.dump(family, states, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *Conn) dump(family uint8, states uint32, out []Socket) ([]Socket, error) {
	c.seq++
	req := encodeRequest(c.seq, family, states)
	if err := unix.Sendto(c.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, os.NewSyscallError("sendto(NETLINK_SOCK_DIAG)", err)
	}
	for {
		n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("recvfrom(NETLINK_SOCK_DIAG)", err)
		}
		var done bool
		if out, done, err = decodeBatch(c.buf[:n], c.seq, out); err != nil || done {
			return out, err
		}
	}
}

// decodeBatch appends the sockets of one netlink read to out and reports
// whether the dump is complete.
func decodeBatch(b []byte, seq uint32, out []Socket) ([]Socket, bool, error) {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return out, false, fmt.Errorf("sock_diag: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Seq != seq {
			continue
		}
		switch m.Header.Type {
		case unix.NLMSG_DONE:
			return out, true, nil
		case unix.NLMSG_ERROR:
			return out, true, decodeError(m.Data)
		case unix.SOCK_DIAG_BY_FAMILY:
			s, err := decodeMsg(m.Data)
			if err != nil {
				return out, false, err
			}
			out = append(out, s)
		}
	}
	return out, false, nil
}
