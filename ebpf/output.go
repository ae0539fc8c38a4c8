package ebpf

import (
	"net"
	"net/netip"
	"strconv"
)

// Failure outputs read exactly like the errors of the dial they replace
// (Go's *net.OpError text), so events and probectl show the same words
// whichever way the probe was answered.

func refusedOutput(dst netip.Addr, port int) string {
	return "dial tcp " + hostPort(dst, port) + ": connect: connection refused"
}

func timeoutOutput(dst netip.Addr, port int) string {
	return "dial tcp " + hostPort(dst, port) + ": i/o timeout"
}

func hostPort(dst netip.Addr, port int) string {
	return net.JoinHostPort(dst.Unmap().String(), strconv.Itoa(port))
}
