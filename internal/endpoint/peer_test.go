package endpoint_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/probelet/probelet/internal/endpoint"
)

// PeerPid names the process serving a unix socket, here this test itself.
func TestPeerPid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			defer c.Close()
			_, _ = c.Read(make([]byte, 1))
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid, err := endpoint.PeerPid(c)
	if err != nil || int(pid) != os.Getpid() {
		t.Errorf("PeerPid = %d, %v; want %d", pid, err, os.Getpid())
	}
	if _, err := endpoint.PeerPid(pipeConn{}); err == nil {
		t.Error("PeerPid of a connection without a socket succeeded")
	}
}

// pipeConn is a net.Conn without a socket.
type pipeConn struct{ net.Conn }
