//go:build e2e

package e2e_test

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

// Ports for daemons that must be told their address before they start
// (containerd launches the pre-installed plugin; a DaemonSet declares its
// port). They come from below the kernel's ephemeral range (32768+), so no
// outgoing connection and no ":0" listener takes one between the pick and
// the daemon's bind (CI saw a kernel-picked port taken that way 30 s
// later), and from below hack/cluster's 20000-32767, so a control plane
// started beside the test does not pick it either.
const (
	pickedPortMin = 12000
	pickedPortMax = 19999
)

var pickedPorts = struct {
	sync.Mutex
	taken map[int]bool
}{taken: map[int]bool{}}

// freeLocalAddr returns a loopback address whose port nobody listens on
// now and that no other test in this process has been given.
func freeLocalAddr(t *testing.T) string {
	t.Helper()
	pickedPorts.Lock()
	defer pickedPorts.Unlock()
	for range 200 {
		port := pickedPortMin + rand.IntN(pickedPortMax-pickedPortMin+1)
		if pickedPorts.taken[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		pickedPorts.taken[port] = true
		return l.Addr().String()
	}
	t.Fatalf("no free TCP port in %d-%d", pickedPortMin, pickedPortMax)
	return ""
}
