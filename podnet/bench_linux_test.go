//go:build linux

package podnet_test

import (
	"context"
	"net"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/internal/testutil/netnstest"
)

// BenchmarkSocket prices the ways to make a probe's socket, side by side:
// in probelet's own namespace (the node origin); entering the pod's on the
// calling thread, locked to it for the socket call (Namespace.Socket, what
// probelet does); entering it on a goroutine of its own, locked and
// disposable (the first design: two hand-offs, each a thread wake-up on an
// idle node); and asking a factory thread that lives in the pod's
// namespace (a thread per pod, no setns per socket, two hand-offs too).
//
//	go test -run '^$' -bench BenchmarkSocket ./podnet/
func BenchmarkSocket(b *testing.B) {
	pod := netnstest.New(b)
	ns := open(b, newPins(b), "sandbox-a", pod.Path)
	b.Run("node", func(b *testing.B) {
		for b.Loop() {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			_ = unix.Close(fd)
		}
	})
	b.Run("pod-enter-leave", func(b *testing.B) {
		for b.Loop() {
			fd, err := ns.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
			if err != nil {
				b.Fatal(err)
			}
			_ = unix.Close(fd)
		}
	})
	b.Run("pod-goroutine-enter-leave", func(b *testing.B) {
		for b.Loop() {
			fd, err := onOwnGoroutine(func() (int, error) { return ns.Socket(unix.AF_INET, unix.SOCK_STREAM, 0) })
			if err != nil {
				b.Fatal(err)
			}
			_ = unix.Close(fd)
		}
	})
	b.Run("pod-factory-thread", func(b *testing.B) {
		f := newFactory(b, pod.Path)
		defer f.close()
		for b.Loop() {
			fd, err := f.socket()
			if err != nil {
				b.Fatal(err)
			}
			_ = unix.Close(fd)
		}
	})
}

// BenchmarkDialTCP is a whole probe connection (connect, accept, close)
// to a listener in the pod, from the pod's namespace (net's dial on a
// socket made there) and, for scale, a plain net.Dial from the node to a
// listener on the node's loopback.
func BenchmarkDialTCP(b *testing.B) {
	pod, inPod, onNode := listeners(b)
	ns := open(b, newPins(b), "sandbox-a", pod.Path)
	b.Run("node", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp", onNode.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			_ = c.Close()
		}
	})
	b.Run("pod", func(b *testing.B) {
		addr := addrOf(inPod)
		for b.Loop() {
			c, err := ns.DialTCP(context.Background(), addr)
			if err != nil {
				b.Fatal(err)
			}
			_ = c.Close()
		}
	})
}

// onOwnGoroutine runs f on a goroutine of its own and waits for it: the
// hand-offs the first design paid for each socket.
func onOwnGoroutine(f func() (int, error)) (int, error) {
	done := make(chan made, 1)
	go func() {
		fd, err := f()
		done <- made{fd, err}
	}()
	m := <-done
	return m.fd, m.err
}

// factory is a thread that stays in a namespace and makes sockets there.
type factory struct {
	reqs chan chan made
}

type made struct {
	fd  int
	err error
}

func newFactory(b *testing.B, path string) *factory {
	f := &factory{reqs: make(chan chan made)}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with it
		nsf, err := os.Open(path)
		if err == nil {
			err = unix.Setns(int(nsf.Fd()), unix.CLONE_NEWNET)
			nsf.Close()
		}
		ready <- err
		if err != nil {
			return
		}
		for r := range f.reqs {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
			r <- made{fd, err}
		}
	}()
	if err := <-ready; err != nil {
		b.Fatal(err)
	}
	return f
}

func (f *factory) socket() (int, error) {
	r := make(chan made, 1)
	f.reqs <- r
	m := <-r
	return m.fd, m.err
}

func (f *factory) close() { close(f.reqs) }
