//go:build linux

package tcpprobe_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/internal/probetest"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// startAndFinish is a probe the engine's way: StartTCP on the scheduling
// goroutine, Finish on a runner when it did not answer; declined is true
// when StartTCP left the target to ProbeTCP.
func startAndFinish(ctx context.Context, d *tcpprobe.Dialer, target probe.TCPTarget) (res probe.Result, out string, declined, pended bool, err error) {
	res, out, method, pending, ok := d.StartTCP(target)
	if method != probe.MethodDial {
		return res, out, false, false, errors.New("StartTCP method " + string(method))
	}
	switch {
	case ok:
		return res, out, false, false, nil
	case pending == nil:
		return res, out, true, false, nil
	}
	res, out, _, err = pending.Finish(ctx)
	return res, out, false, true, err
}

// StartTCP answers as ProbeTCP does, target by target: the same result and
// the same text.
func TestStartTCPAnswersAsProbeTCP(t *testing.T) {
	open, closed, full := openPort(t), probetest.ClosedPort(t), fullPort(t)
	tests := []struct {
		name     string
		target   probe.TCPTarget
		declined bool
		pended   bool
	}{
		{"open port", probe.TCPTarget{Host: "127.0.0.1", Port: open}, false, false},
		{"closed port", probe.TCPTarget{Host: "127.0.0.1", Port: closed}, false, false},
		{"IPv4-mapped IPv6 host", probe.TCPTarget{Host: "::ffff:127.0.0.1", Port: open}, false, false},
		{"non-accepting target times out", probe.TCPTarget{Host: "127.0.0.1", Port: full}, false, true},
		{"port 0 is ProbeTCP's", probe.TCPTarget{Host: "127.0.0.1", Port: 0}, true, false},
		{"port -1 is ProbeTCP's", probe.TCPTarget{Host: "127.0.0.1", Port: -1}, true, false},
		{"no host is ProbeTCP's", probe.TCPTarget{Port: open}, true, false},
		{"a host name is ProbeTCP's", probe.TCPTarget{Host: "localhost", Port: open}, true, false},
		{"a zone is ProbeTCP's", probe.TCPTarget{Host: "fe80::1%lo", Port: open}, true, false},
	}
	d := tcpprobe.NewDialer()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.target.Timeout = testTimeout
			res, out, declined, pended, err := startAndFinish(context.Background(), d, tc.target)
			if declined != tc.declined || pended != tc.pended {
				t.Fatalf("StartTCP declined=%v pended=%v, want %v, %v", declined, pended, tc.declined, tc.pended)
			}
			if declined {
				return
			}
			wantRes, wantOut, _, wantErr := d.ProbeTCP(context.Background(), tc.target)
			if res != wantRes || out != wantOut || (err == nil) != (wantErr == nil) {
				t.Fatalf("StartTCP = (%s, %q, %v), ProbeTCP = (%s, %q, %v)", res, out, err, wantRes, wantOut, wantErr)
			}
		})
	}
}

func TestStartTCPIPv6(t *testing.T) {
	target := probe.TCPTarget{Host: "::1", Port: openPort6(t), Timeout: testTimeout}
	if res, out, declined, _, err := startAndFinish(context.Background(), tcpprobe.NewDialer(), target); err != nil || declined || res != probe.Success {
		t.Fatalf("StartTCP([::1]) = (%s, %q, %v, declined %v), want success", res, out, err, declined)
	}
}

// A handshake that completes after StartTCP returned is finished on the
// runner: the accept queue is full at the start, so the SYN is dropped,
// and drained before the client's retransmission (after 1 s).
func TestStartTCPFinishesALateHandshake(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listenerOn(fd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	fill(t, "127.0.0.1:"+strconv.Itoa(port))
	_, _, _, pending, ok := tcpprobe.NewDialer().StartTCP(probe.TCPTarget{Host: "127.0.0.1", Port: port, Timeout: 10 * time.Second})
	if ok || pending == nil {
		t.Fatalf("StartTCP on a full accept queue: ok=%v pending=%v, want a probe under way", ok, pending)
	}
	go acceptAndClose(ln) // drains the queue; the retransmitted SYN is answered
	res, out, _, err := pending.Finish(context.Background())
	if err != nil || res != probe.Success {
		t.Fatalf("Finish = (%s, %q, %v), want success", res, out, err)
	}
}

func listenerOn(fd int) (net.Listener, error) {
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, err
	}
	if err := syscall.Listen(fd, 0); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	return net.FileListener(f)
}

// A probe whose engine gave up ends at once with ProbeTCP's error.
func TestStartTCPFinishCancelled(t *testing.T) {
	_, _, _, pending, ok := tcpprobe.NewDialer().StartTCP(probe.TCPTarget{Host: "127.0.0.1", Port: fullPort(t), Timeout: time.Minute})
	if ok || pending == nil {
		t.Fatal("StartTCP on a full accept queue answered at once")
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res, _, _, err := pending.Finish(ctx)
	if !errors.Is(err, context.Canceled) || res != probe.Unknown {
		t.Fatalf("Finish(cancelled) = (%s, %v), want unknown and context.Canceled", res, err)
	}
}

// On the wire a probe ends as the kubelet's does: with a FIN (the
// target's read sees the end of the stream), not a reset — the same for
// ProbeTCP and StartTCP.
func TestStartTCPClosesAsTheKubelet(t *testing.T) {
	for _, how := range []string{"ProbeTCP", "StartTCP"} {
		t.Run(how, func(t *testing.T) {
			port, seen := observer(t)
			target := probe.TCPTarget{Host: "127.0.0.1", Port: port, Timeout: time.Second}
			d := tcpprobe.NewDialer()
			var res probe.Result
			if how == "ProbeTCP" {
				res, _, _, _ = d.ProbeTCP(context.Background(), target)
			} else {
				res, _, _, _, _ = startAndFinish(context.Background(), d, target)
			}
			if res != probe.Success {
				t.Fatalf("%s = %s, want success", how, res)
			}
			if err := <-seen; err != io.EOF {
				t.Fatalf("the target's read after the probe: %v, want EOF (a FIN)", err)
			}
		})
	}
}

// observer accepts one connection and reports what its read sees.
func observer(t *testing.T) (int, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	seen := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			seen <- err
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 16))
		seen <- err
	}()
	return ln.Addr().(*net.TCPAddr).Port, seen
}

// Sockets whose FIN is not yet acknowledged are held, never leaked: after
// many probes and the linger second, a sweep leaves no probe socket open.
func TestStartTCPLeavesNoSocketOpen(t *testing.T) {
	open := openPort(t)
	d := tcpprobe.NewDialer()
	before := openFiles(t)
	target := probe.TCPTarget{Host: "127.0.0.1", Port: open, Timeout: time.Second}
	for range 200 {
		if res, out, declined, _, err := startAndFinish(context.Background(), d, target); res != probe.Success || declined {
			t.Fatalf("StartTCP = (%s, %q, %v, declined %v)", res, out, err, declined)
		}
	}
	waitSwept(t, "the probes' sockets closed", func() { _, _, _, _, _ = startAndFinish(context.Background(), d, target) }, before)
}

// waitSwept waits until no more than one socket is open beyond before,
// running dial once per linger second (the kubelet's SO_LINGER {1, 1}): a
// dial's sweep closes the sockets held past it, some on goroutines of their
// own, and dial's own socket may be held in turn.
func waitSwept(t *testing.T, what string, dial func(), before int) {
	t.Helper()
	const lingerSecond = time.Second
	swept := time.Now()
	testutil.WaitFor(t, what, func() bool {
		if time.Since(swept) > lingerSecond {
			dial()
			swept = time.Now()
		}
		return openFiles(t) <= before+1
	})
}

func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}
