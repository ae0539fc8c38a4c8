package proxy

import (
	"net"
	"sync"
	"time"
)

// handoverTimeout bounds how long a stopping proxy waits for the gRPC
// server to take up connections it has accepted; taking one up is a
// goroutine start away, so only a starved machine comes near it.
const handoverTimeout = 2 * time.Second

// handoverListener counts the connections it has accepted that the gRPC
// server has not yet taken up (done anything with). grpc-go closes a
// connection it accepted but had not begun to serve when it is told to
// stop, without a GOAWAY: the client reads "connection reset" and its
// call fails. On a restart that is the kubelet's reconnection, accepted by
// the new probelet just as it starts. So Serve stops accepting first and
// waits until every accepted connection has been taken up; from then on
// GracefulStop serves or drains each (GOAWAY), and the client retries on
// whoever accepts next from the socket's backlog.
type handoverListener struct {
	net.Listener

	mu      sync.Mutex
	waiting int
	settled chan struct{} // closed when waiting drops to zero; nil while none wait
}

func newHandoverListener(l net.Listener) *handoverListener {
	return &handoverListener{Listener: l}
}

func (l *handoverListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.waiting++
	l.mu.Unlock()
	return &handoverConn{Conn: c, l: l}, nil
}

func (l *handoverListener) takenUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiting--
	if l.waiting == 0 && l.settled != nil {
		close(l.settled)
		l.settled = nil
	}
}

// settle waits until every connection accepted so far has been taken up,
// at most timeout, and reports whether they all were. Call it once Accept
// can return no more connections.
func (l *handoverListener) settle(timeout time.Duration) bool {
	l.mu.Lock()
	if l.waiting == 0 {
		l.mu.Unlock()
		return true
	}
	if l.settled == nil {
		l.settled = make(chan struct{})
	}
	ch := l.settled
	l.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// handoverConn tells its listener when the server first touches it: grpc
// checks whether it is stopping before it does anything with a new
// connection, so past that first touch the connection is served or drained.
type handoverConn struct {
	net.Conn
	l    *handoverListener
	once sync.Once
}

func (c *handoverConn) touch() { c.once.Do(c.l.takenUp) }

func (c *handoverConn) Read(b []byte) (int, error)  { c.touch(); return c.Conn.Read(b) }
func (c *handoverConn) Write(b []byte) (int, error) { c.touch(); return c.Conn.Write(b) }
func (c *handoverConn) Close() error                { c.touch(); return c.Conn.Close() }

func (c *handoverConn) SetDeadline(t time.Time) error {
	c.touch()
	return c.Conn.SetDeadline(t)
}

func (c *handoverConn) SetReadDeadline(t time.Time) error {
	c.touch()
	return c.Conn.SetReadDeadline(t)
}

func (c *handoverConn) SetWriteDeadline(t time.Time) error {
	c.touch()
	return c.Conn.SetWriteDeadline(t)
}
