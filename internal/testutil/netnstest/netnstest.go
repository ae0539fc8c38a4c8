// Package netnstest makes throw-away network namespaces for tests of
// probes from a pod's namespace: each a named namespace (ip netns) with
// its loopback up, removed when the test ends. It needs root and
// iproute2; without them a test is Unavailable (a failure in CI).
package netnstest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/internal/testutil"
)

// NS is one test network namespace.
type NS struct {
	// Name is its ip-netns name; Path its file (/run/netns/NAME).
	Name, Path string
}

// New makes a namespace with its loopback up, deleted at the test's end.
func New(t testing.TB) *NS {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.Unavailable(t, "network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testutil.Unavailable(t, "ip (iproute2) is not installed: %v", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := &NS{Name: "probelet-test-" + hex.EncodeToString(b)}
	ns.Path = "/run/netns/" + ns.Name
	run(t, "ip", "netns", "add", ns.Name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", ns.Name).Run() })
	ns.Run(t, "ip", "link", "set", "lo", "up")
	return ns
}

// AddAddress gives the namespace an address (CIDR) of its own, as a CNI
// gives a pod its IP (on its loopback: every kernel has one, not every
// kernel the dummy driver).
func (ns *NS) AddAddress(t testing.TB, cidr string) {
	t.Helper()
	ns.Run(t, "ip", "addr", "add", cidr, "dev", "lo")
}

// Run runs a command inside the namespace and fails the test on an error.
func (ns *NS) Run(t testing.TB, args ...string) {
	t.Helper()
	run(t, append([]string{"ip", "netns", "exec", ns.Name}, args...)...)
}

// Listen opens a listener inside the namespace (its socket made there),
// closed at the test's end.
func (ns *NS) Listen(t testing.TB, network, addr string) net.Listener {
	t.Helper()
	var l net.Listener
	var err error
	ns.Do(t, func() { l, err = net.Listen(network, addr) })
	if err != nil {
		t.Fatalf("listen in %s: %v", ns.Name, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// Do runs f on a thread inside the namespace. The thread returns to the
// test's namespace after, or dies with its goroutine.
func (ns *NS) Do(t testing.TB, f func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- err
			return
		}
		defer home.Close()
		target, err := os.Open(ns.Path)
		if err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		f()
		if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- err // the thread stays locked and exits
			return
		}
		runtime.UnlockOSThread()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatalf("in network namespace %s: %v", ns.Name, err)
	}
}

func run(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}
