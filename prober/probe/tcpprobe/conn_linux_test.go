//go:build linux

package tcpprobe_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// echoPort echoes one line per connection, then closes it.
func echoPort(t *testing.T) int {
	t.Helper()
	return probetest.ServePort(t, func(c net.Conn) {
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		_, _ = c.Write(buf[:n])
	})
}

// DialRaw's connection behaves as net's, step by step: the same dial
// errors, the same bytes, the same end of stream, the same deadline error.
func TestDialRawBehavesAsNetsConnection(t *testing.T) {
	d := tcpprobe.NewDialer()
	dials := map[string]func(context.Context, string, string) (net.Conn, error){"net": d.DialContext, "raw": d.DialRaw}
	closed := "127.0.0.1:" + strconv.Itoa(probetest.ClosedPort(t))
	full := "127.0.0.1:" + strconv.Itoa(fullPort(t))
	echo := "127.0.0.1:" + strconv.Itoa(echoPort(t))
	silent := "127.0.0.1:" + strconv.Itoa(probetest.SilentPort(t))
	results := map[string][]string{}
	for name, dial := range dials {
		var got []string
		note := func(what string, err error) { got = append(got, what+": "+errText(err)) }

		_, err := dial(context.Background(), "tcp", closed)
		note("refused", err)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err = dial(ctx, "tcp", full)
		cancel()
		note("dial timeout", err)
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err = dial(ctx, "tcp", full)
		note("dial cancelled", err)

		c, err := dial(context.Background(), "tcp", echo)
		if err != nil {
			t.Fatalf("%s: dial %s: %v", name, echo, err)
		}
		if c.RemoteAddr().String() != echo || !strings.HasPrefix(c.LocalAddr().String(), "127.0.0.1:") {
			t.Errorf("%s: addresses %v -> %v", name, c.LocalAddr(), c.RemoteAddr())
		}
		_, err = c.Write([]byte("hello"))
		note("write", err)
		b, err := io.ReadAll(c)
		got = append(got, "echo: "+string(b))
		note("read to the end", err)
		_, err = c.Read(make([]byte, 1))
		note("read after the end", err)
		note("close", c.Close())
		_, err = c.Read(make([]byte, 1))
		note("read after close", stripAddrs(err))
		_, err = c.Write([]byte("x"))
		note("write after close", stripAddrs(err))
		note("close again", stripAddrs(c.Close()))
		err = c.SetDeadline(time.Now())
		got = append(got, "deadline after close: closed "+strconv.FormatBool(errors.Is(err, net.ErrClosed)))

		c, err = dial(context.Background(), "tcp", silent)
		if err != nil {
			t.Fatalf("%s: dial %s: %v", name, silent, err)
		}
		waiting := testutil.ParkedRead(t, c)
		note("close with a read waiting", c.Close())
		select {
		case err := <-waiting:
			note("the waiting read", stripAddrs(err))
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Close left a parked read waiting", name)
		}

		c, err = dial(context.Background(), "tcp", silent)
		if err != nil {
			t.Fatalf("%s: dial %s: %v", name, silent, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		got = append(got, "deadline is a timeout: "+strconv.FormatBool(errors.As(err, &ne) && ne.Timeout()))
		note("read past the deadline", stripAddrs(err))
		_ = c.Close()
		results[name] = got
	}
	if n, r := strings.Join(results["net"], "\n  "), strings.Join(results["raw"], "\n  "); n != r {
		t.Fatalf("net's connection:\n  %s\nDialRaw's:\n  %s", n, r)
	}
}

// DialRaw's sockets whose FIN is not yet acknowledged at Close are held,
// never leaked: after many connections and the linger second, a dial's
// sweep leaves none open.
func TestDialRawLeavesNoSocketOpen(t *testing.T) {
	d := tcpprobe.NewDialer()
	echo := "127.0.0.1:" + strconv.Itoa(echoPort(t))
	before := openFiles(t)
	exchange := func() {
		c, err := d.DialRaw(context.Background(), "tcp", echo)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(c)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		exchange()
	}
	waitSwept(t, "the connections' sockets closed", exchange, before)
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// stripAddrs drops a connection's ephemeral local port from its errors.
func stripAddrs(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		cp := *oe
		cp.Source = nil
		return &cp
	}
	return err
}

// DialRaw's connection names both ends as net's does, on either family.
func TestDialRawAddresses(t *testing.T) {
	d := tcpprobe.NewDialer()
	for _, network := range []string{"tcp4", "tcp6"} {
		ln, err := net.Listen(network, map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network])
		if err != nil {
			t.Logf("%s: no loopback: %v", network, err)
			continue
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				_ = c.Close()
			}
		}()
		c, err := d.DialRaw(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		local := c.LocalAddr().(*net.TCPAddr)
		if c.RemoteAddr().String() != ln.Addr().String() || local.IP.String() != host || local.Port == 0 {
			t.Errorf("%s: %v -> %v, want %s:port -> %v", network, c.LocalAddr(), c.RemoteAddr(), host, ln.Addr())
		}
		_ = c.Close()
	}
}
