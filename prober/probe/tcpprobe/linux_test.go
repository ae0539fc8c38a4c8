//go:build linux

package tcpprobe_test

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// fullPort returns a loopback port whose listener never accepts and whose
// accept queue is full, so the kernel drops further SYNs and a connect
// hangs until its timeout, like a wedged app, without leaving the machine.
func fullPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	fill(t, "127.0.0.1:"+strconv.Itoa(port))
	return port
}

// fill connects until a connect times out, which proves the queue is full.
func fill(t *testing.T, addr string) {
	t.Helper()
	for range 16 {
		c, err := net.DialTimeout("tcp4", addr, 50*time.Millisecond)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return
			}
			t.Fatalf("filling %s: %v", addr, err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	t.Fatalf("accept queue of %s never filled", addr)
}

func getLinger(fd int) (*unix.Linger, error) {
	return unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER)
}

// TestDialerSetsLinger checks the kubelet's SO_LINGER {1, 1} on the socket.
func TestDialerSetsLinger(t *testing.T) {
	conn, err := tcpprobe.NewDialer().DialContext(context.Background(), "tcp", "127.0.0.1:"+strconv.Itoa(openPort(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var linger *unix.Linger
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		linger, gerr = getLinger(int(fd))
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if linger.Onoff == 0 || linger.Linger != 1 {
		t.Fatalf("SO_LINGER = %+v, want {Onoff: 1, Linger: 1}", *linger)
	}
}
