package ebpf

import (
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T, network, host string) int {
	t.Helper()
	ln, err := net.Listen(network, net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// TestRefusedOutputIsTheDialError pins the text to what Go's dialer says.
func TestRefusedOutputIsTheDialError(t *testing.T) {
	for _, tc := range []struct{ network, host string }{{"tcp4", "127.0.0.1"}, {"tcp6", "::1"}} {
		port := closedPort(t, tc.network, tc.host)
		_, err := net.DialTimeout("tcp", net.JoinHostPort(tc.host, strconv.Itoa(port)), time.Second)
		if err == nil {
			t.Fatalf("dial to closed port %d succeeded", port)
		}
		if got := refusedOutput(netip.MustParseAddr(tc.host), port); got != err.Error() {
			t.Errorf("refusedOutput = %q, dial said %q", got, err.Error())
		}
	}
}

func TestOutputsUnmapV4InV6(t *testing.T) {
	got := timeoutOutput(netip.MustParseAddr("::ffff:10.0.0.5"), 8080)
	if want := "dial tcp 10.0.0.5:8080: i/o timeout"; got != want {
		t.Errorf("timeoutOutput = %q, want %q", got, want)
	}
}
