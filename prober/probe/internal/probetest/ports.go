// Package probetest holds the loopback listeners the probe handlers'
// tests share.
package probetest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// ClosedPort returns a loopback port that had a listener a moment ago and
// has none now, so connecting to it is refused.
func ClosedPort(t testing.TB) int {
	t.Helper()
	ln := listen(t)
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port
}

// SilentPort returns a loopback port whose listener accepts connections and
// never writes, so a probe waits for its timeout. The connections are
// closed when the test ends.
func SilentPort(t testing.TB) int {
	t.Helper()
	ln := listen(t)
	done := make(chan struct{})
	t.Cleanup(func() { _ = ln.Close(); <-done })
	go func() {
		defer close(done)
		holdConnections(ln)
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// holdConnections accepts until ln closes, then closes what it accepted.
func holdConnections(ln net.Listener) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conns = append(conns, c)
	}
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// ServePort returns a loopback port whose listener hands every connection
// to handle on a goroutine of its own, and closes it after.
func ServePort(t testing.TB, handle func(net.Conn)) int {
	t.Helper()
	ln := listen(t)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// Fixed is a server on one port for a whole process, whose connections go
// to the handler set last: for fuzzers, whose inputs run one at a time in a
// process. A listener per input leaves its port in TIME_WAIT (a scripted
// server closes first), and a long run ran out of ports to listen on.
type Fixed struct {
	once   sync.Once
	port   int
	err    error
	handle atomic.Pointer[func(net.Conn)]
}

// Serve makes handle the server's and returns its port.
func (s *Fixed) Serve(t testing.TB, handle func(net.Conn)) int {
	t.Helper()
	s.handle.Store(&handle)
	s.once.Do(func() {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			s.err = err
			return
		}
		s.port = ln.Addr().(*net.TCPAddr).Port
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				h := *s.handle.Load()
				go func() {
					defer c.Close()
					h(c)
				}()
			}
		}()
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.port
}
