package testutil

import (
	"net"
	"strings"
	"testing"
)

// ParkedRead starts a one-byte read of c on a goroutine of its own and
// returns once that read is parked in the netpoller (the goroutine in IO
// wait), with the channel its error will come on: a test of what ends a
// waiting read (Close, a deadline) must not run before the read waits, or
// the read finds the end without waiting and proves nothing. One at a time
// per process: it tells its goroutine by its function's name.
func ParkedRead(t testing.TB, c net.Conn) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go parkedRead(c, done)
	WaitFor(t, "the read to park", func() bool {
		for _, g := range Goroutines("github.com/probelet/probelet/internal/testutil.parkedRead(") {
			if strings.Contains(g[:strings.IndexByte(g, '\n')], "[IO wait") {
				return true
			}
		}
		return false
	})
	return done
}

func parkedRead(c net.Conn, done chan<- error) {
	_, err := c.Read(make([]byte, 1))
	done <- err
}
