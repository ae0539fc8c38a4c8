package testutil

import (
	"net"
	"sync/atomic"
)

// CountAccepts is a listener that counts the connections it accepts.
type CountAccepts struct {
	net.Listener
	N *atomic.Int32
}

func (l CountAccepts) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.N.Add(1)
	}
	return c, err
}
