//go:build linux

package rawconn_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/quietio/rawconn"
)

// serveUnix listens on a socket in a test directory and hands every
// connection to handle, closing it after.
func serveUnix(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
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
	return path
}

// DialUnix's connection behaves as net's, step by step: the same dial
// errors, bytes, end of stream, deadline and closed errors.
func TestDialUnixBehavesAsNets(t *testing.T) {
	echo := serveUnix(t, func(c net.Conn) {
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		_, _ = c.Write(buf[:n])
	})
	silent := serveUnix(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	missing := filepath.Join(t.TempDir(), "none")
	dials := map[string]func(context.Context, string) (net.Conn, error){
		"net": func(ctx context.Context, p string) (net.Conn, error) {
			return new(net.Dialer).DialContext(ctx, "unix", p)
		},
		"raw": rawconn.DialUnix,
	}
	results := map[string][]string{}
	for name, dial := range dials {
		var got []string
		note := func(what string, err error) { got = append(got, what+": "+errText(err)) }
		_, err := dial(context.Background(), missing)
		note("no socket", err)

		c, err := dial(context.Background(), echo)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got = append(got, "remote "+c.RemoteAddr().String(), "local "+c.LocalAddr().String())
		_, err = c.Write([]byte("hello"))
		note("write", err)
		b, err := io.ReadAll(c)
		got = append(got, "echo: "+string(b))
		note("read to the end", err)
		note("close", c.Close())
		_, err = c.Read(make([]byte, 1))
		note("read after close", err)
		_, err = c.Write([]byte("x"))
		note("write after close", err)
		note("close again", c.Close())
		err = c.SetDeadline(time.Now())
		got = append(got, "deadline after close: closed "+strconv.FormatBool(errors.Is(err, net.ErrClosed)))

		c, err = dial(context.Background(), silent)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		got = append(got, "deadline is a timeout: "+strconv.FormatBool(errors.As(err, &ne) && ne.Timeout()))
		note("read past the deadline", err)
		_ = c.SetReadDeadline(time.Time{})
		waiting := testutil.ParkedRead(t, c)
		note("close with a read waiting", c.Close())
		select {
		case err := <-waiting:
			note("the waiting read", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Close left a parked read waiting", name)
		}
		results[name] = got
	}
	if n, r := strings.Join(results["net"], "\n  "), strings.Join(results["raw"], "\n  "); n != r {
		t.Fatalf("net's connection:\n  %s\nDialUnix's:\n  %s", n, r)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
