package tcpprobe_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

const testTimeout = 200 * time.Millisecond

func TestProbeTCP(t *testing.T) {
	open := openPort(t)
	closed := probetest.ClosedPort(t)
	full := fullPort(t)
	tests := []struct {
		name       string
		port       int
		wantResult probe.Result
		wantOutput string // substring; "" means exactly empty
	}{
		{"open port succeeds", open, probe.Success, ""},
		{"closed port is refused", closed, probe.Failure, "connect: connection refused"},
		{"non-accepting target times out", full, probe.Failure, "i/o timeout"},
	}
	d := tcpprobe.NewDialer()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := probe.TCPTarget{Host: "127.0.0.1", Port: tc.port, Timeout: testTimeout}
			res, out, method, err := d.ProbeTCP(context.Background(), target)
			if err != nil {
				t.Fatalf("ProbeTCP error = %v, want nil", err)
			}
			if res != tc.wantResult || method != probe.MethodDial {
				t.Fatalf("ProbeTCP = (%s, %s), want (%s, dial); output %q", res, method, tc.wantResult, out)
			}
			wantAddr := "dial tcp 127.0.0.1:" + strconv.Itoa(tc.port)
			switch {
			case tc.wantOutput == "" && out != "":
				t.Errorf("output = %q, want empty", out)
			case tc.wantOutput != "" && (!strings.Contains(out, tc.wantOutput) || !strings.HasPrefix(out, wantAddr)):
				t.Errorf("output = %q, want %q... containing %q", out, wantAddr, tc.wantOutput)
			}
		})
	}
}

func TestProbeTCPIPv6(t *testing.T) {
	target := probe.TCPTarget{Host: "::1", Port: openPort6(t), Timeout: testTimeout}
	res, out, _, err := tcpprobe.NewDialer().ProbeTCP(context.Background(), target)
	if err != nil || res != probe.Success {
		t.Fatalf("ProbeTCP([::1]) = (%s, %q, %v), want success", res, out, err)
	}
}

func TestProbeTCPBadTarget(t *testing.T) {
	tests := []struct {
		name   string
		target probe.TCPTarget
		want   string
	}{
		{"no timeout", probe.TCPTarget{Host: "127.0.0.1", Port: 80}, "timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, _, _, err := tcpprobe.NewDialer().ProbeTCP(context.Background(), tc.target)
			if err == nil || !strings.Contains(err.Error(), tc.want) || res != probe.Unknown {
				t.Fatalf("ProbeTCP = (%s, %v), want unknown and an error containing %q", res, err, tc.want)
			}
		})
	}
}

// The kubelet's TestTcpHealthChecker ("No connection can be made and
// probing would fail"): its TCP prober checks no port, so a port no dial
// can use (-1 from a named port of an impossible number, 0, 65536) is the
// dial's Failure with the dial's text, never an error.
func TestProbeTCPImpossiblePortIsAFailure(t *testing.T) {
	tests := []struct {
		port int
		want string
	}{
		{-1, "dial tcp: address -1: invalid port"},
		{65536, "dial tcp: address 65536: invalid port"},
		{0, "dial tcp 127.0.0.1:0: connect: connection refused"},
	}
	for _, tc := range tests {
		t.Run(strconv.Itoa(tc.port), func(t *testing.T) {
			target := probe.TCPTarget{Host: "127.0.0.1", Port: tc.port, Timeout: time.Second}
			res, out, method, err := tcpprobe.NewDialer().ProbeTCP(context.Background(), target)
			if err != nil || res != probe.Failure || out != tc.want || method != probe.MethodDial {
				t.Fatalf("ProbeTCP(port %d) = (%s, %q, %s, %v), want (failure, %q, dial, nil)", tc.port, res, out, method, err, tc.want)
			}
		})
	}
}

func TestProbeTCPCancelledIsError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	target := probe.TCPTarget{Host: "127.0.0.1", Port: fullPort(t), Timeout: time.Minute}
	res, _, _, err := tcpprobe.NewDialer().ProbeTCP(ctx, target)
	if !errors.Is(err, context.Canceled) || res != probe.Unknown {
		t.Fatalf("ProbeTCP(cancelled) = (%s, %v), want unknown and context.Canceled", res, err)
	}
}

func openPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go acceptAndClose(ln)
	return ln.Addr().(*net.TCPAddr).Port
}

// openPort6 is openPort on the IPv6 loopback; the test is skipped
// without one.
func openPort6(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go acceptAndClose(ln)
	return ln.Addr().(*net.TCPAddr).Port
}

func acceptAndClose(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}

// A pod without an IP makes the kubelet dial ":port": the node's own
// addresses, with the dial's answer.
func TestProbeTCPEmptyHostDialsTheNodesAddress(t *testing.T) {
	open := openPort(t)
	res, out, _, err := tcpprobe.NewDialer().ProbeTCP(context.Background(), probe.TCPTarget{Port: open, Timeout: time.Second})
	if err != nil || res != probe.Success {
		t.Fatalf("ProbeTCP(:%d, listening) = (%s, %q, %v), want success", open, res, out, err)
	}
	closed := probetest.ClosedPort(t)
	res, out, _, err = tcpprobe.NewDialer().ProbeTCP(context.Background(), probe.TCPTarget{Port: closed, Timeout: time.Second})
	want := fmt.Sprintf("dial tcp :%d: connect: connection refused", closed)
	if err != nil || res != probe.Failure || out != want {
		t.Fatalf("ProbeTCP(:%d, closed) = (%s, %q, %v), want failure %q", closed, res, out, err, want)
	}
}
