//go:build linux

package podnet_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/internal/testutil/netnstest"
	"github.com/probelet/probelet/podnet"
)

func newPins(t testing.TB) *podnet.Pins {
	t.Helper()
	p, err := podnet.NewPins()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// loopback is what a test namespace holds for sure.
var loopback = netip.MustParseAddr("127.0.0.1")

func open(t testing.TB, p *podnet.Pins, sandbox, path string) *podnet.Namespace {
	t.Helper()
	ns, err := p.Open(sandbox, path, loopback)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return ns
}

// serve accepts on l and writes each peer's address back.
func serve(l net.Listener) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = fmt.Fprintf(c, "%s\n", c.RemoteAddr())
			_ = c.Close()
		}
	}()
}

func addrOf(l net.Listener) netip.AddrPort {
	return l.Addr().(*net.TCPAddr).AddrPort()
}

// listeners are two serving listeners on 127.0.0.1: one in a new pod
// namespace, one on the node's loopback.
func listeners(t testing.TB) (pod *netnstest.NS, inPod, onNode net.Listener) {
	t.Helper()
	pod = netnstest.New(t)
	inPod = pod.Listen(t, "tcp", "127.0.0.1:0")
	serve(inPod)
	onNode, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = onNode.Close() })
	serve(onNode)
	return pod, inPod, onNode
}

// A pod-origin dial reaches what the pod's own processes reach: its own
// loopback, with its own source address; never the node's loopback.
func TestDialTCPReachesThePodsNamespaceOnly(t *testing.T) {
	pod, inPod, onNode := listeners(t)
	if addrOf(inPod).Port() == addrOf(onNode).Port() {
		t.Skip("the two listeners got the same port; nothing to tell apart")
	}
	ns := open(t, newPins(t), "sandbox-a", pod.Path)

	for _, tc := range []struct {
		name    string
		addr    netip.AddrPort
		wantErr string
	}{
		{"the pod's own listener", addrOf(inPod), ""},
		{"the node's loopback listener is not there", addrOf(onNode), "connect: connection refused"},
		{"an address the pod has no route to", netip.MustParseAddrPort("192.0.2.1:80"), "connect: network is unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := ns.DialTCP(ctx, tc.addr)
			if tc.wantErr != "" {
				want := "dial tcp " + tc.addr.String() + ": " + tc.wantErr
				if err == nil || err.Error() != want {
					t.Fatalf("DialTCP(%s) = %v, want %q", tc.addr, err, want)
				}
				if podnet.IsSocketError(err) {
					t.Fatalf("a connect error is the app's answer, not a SocketError: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			line := make([]byte, 64)
			n, _ := c.Read(line)
			if peer := strings.TrimSpace(string(line[:n])); !strings.HasPrefix(peer, "127.0.0.1:") || peer != c.LocalAddr().String() {
				t.Fatalf("the app saw %q, the probe's socket is %s", peer, c.LocalAddr())
			}
		})
	}
}

func TestDialTCPAnswersLikeNetAtItsDeadline(t *testing.T) {
	pod := netnstest.New(t)
	// A namespace that drops everything on its loopback: the SYN is never
	// answered.
	pod.Run(t, "iptables", "-w", "-A", "INPUT", "-i", "lo", "-p", "tcp", "--dport", "9", "-j", "DROP")
	ns := open(t, newPins(t), "sandbox-a", pod.Path)
	addr := netip.MustParseAddrPort("127.0.0.1:9")
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want string
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}, "dial tcp 127.0.0.1:9: i/o timeout"},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		}, "dial tcp 127.0.0.1:9: operation was canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			_, err := ns.DialTCP(ctx, addr)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("DialTCP = %v, want %q", err, tc.want)
			}
			var ne net.Error
			if tc.name == "deadline" && (!errors.As(err, &ne) || !ne.Timeout()) {
				t.Fatalf("%v is not a net.Error timeout", err)
			}
		})
	}
}

func TestOpenRefusesWhatIsNotThePodsOwn(t *testing.T) {
	pod, other := netnstest.New(t), netnstest.New(t)
	pins := newPins(t)
	open(t, pins, "sandbox-a", pod.Path)
	notNS := filepath.Join(t.TempDir(), "net")
	if err := os.WriteFile(notNS, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	other.AddAddress(t, "10.255.0.2/32")
	for _, tc := range []struct {
		name, sandbox, path, want string
		ip                        netip.Addr // loopback if not valid
	}{
		{"the node's namespace, as probelet sees it", "sandbox-b", "/proc/self/ns/net", "is the node's network namespace", netip.Addr{}},
		// Refused as the node's, or not opened at all where init's
		// namespace files are out of reach (this test bed's VM).
		{"the node's namespace, as init sees it", "sandbox-b", "/proc/1/ns/net", "is the node's network namespace|open /proc/1/ns/net: permission denied", netip.Addr{}},
		{"another sandbox's namespace", "sandbox-b", pod.Path, "is the network namespace of another sandbox, sandbox-a", netip.Addr{}},
		{"a mount namespace", "sandbox-b", "/proc/self/ns/mnt", "is not a network namespace", netip.Addr{}},
		{"a plain file", "sandbox-b", notNS, "is not a namespace file", netip.Addr{}},
		{"nothing", "sandbox-b", filepath.Join(t.TempDir(), "gone"), "no such file or directory", netip.Addr{}},
		{"a namespace without the pod's address", "sandbox-b", other.Path, "does not hold the pod's address 10.255.0.1",
			netip.MustParseAddr("10.255.0.1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ip := loopback
			if tc.ip.IsValid() {
				ip = tc.ip
			}
			ns, err := pins.Open(tc.sandbox, tc.path, ip)
			if err == nil {
				_ = ns.Close()
				t.Fatalf("Open(%s, %s) pinned %s", tc.sandbox, tc.path, ns)
			}
			if !slices.ContainsFunc(strings.Split(tc.want, "|"), func(w string) bool { return strings.Contains(err.Error(), w) }) {
				t.Fatalf("Open(%s, %s) = %v, want it to say %q", tc.sandbox, tc.path, err, tc.want)
			}
		})
	}
	t.Run("the same sandbox again, and another namespace", func(t *testing.T) {
		open(t, pins, "sandbox-a", pod.Path)
		open(t, pins, "sandbox-b", other.Path)
		if pinned := pins.Pinned(); pinned != 2 {
			t.Fatalf("%d namespaces pinned, want 2", pinned)
		}
	})
}

// A namespace pinned keeps being the one opened, whatever its path names
// later; a released one answers ErrGone and lets another sandbox take it.
func TestPinnedNamespaceOutlivesItsPath(t *testing.T) {
	pod := netnstest.New(t)
	inPod := pod.Listen(t, "tcp", "127.0.0.1:0")
	serve(inPod)
	pins := newPins(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "netns")
	if err := os.Symlink(pod.Path, link); err != nil {
		t.Fatal(err)
	}
	ns := open(t, pins, "sandbox-a", link)
	// The path now names the node's namespace.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/proc/self/ns/net", link); err != nil {
		t.Fatal(err)
	}
	c, err := ns.DialTCP(context.Background(), addrOf(inPod))
	if err != nil {
		t.Fatalf("the pinned namespace: %v", err)
	}
	_ = c.Close()

	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ns.DialTCP(context.Background(), addrOf(inPod))
	if !errors.Is(err, podnet.ErrGone) || !podnet.IsSocketError(err) {
		t.Fatalf("a released namespace: %v, want a SocketError for ErrGone", err)
	}
	open(t, pins, "sandbox-b", pod.Path)
}

// Every thread is back in the node's namespace after many sockets made
// from many goroutines at once.
func TestSocketLeavesNoThreadInThePod(t *testing.T) {
	pod := netnstest.New(t)
	ns := open(t, newPins(t), "sandbox-a", pod.Path)
	home, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				fd, err := ns.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
				if err != nil {
					t.Error(err)
					return
				}
				_ = unix.Close(fd)
			}
		})
	}
	wg.Wait()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, task := range tasks {
		got, err := os.Readlink(filepath.Join("/proc/self/task", task.Name(), "ns/net"))
		switch {
		case errors.Is(err, os.ErrNotExist): // the thread ended meanwhile
		case err != nil:
			t.Fatal(err)
		case got != home:
			t.Errorf("thread %s is in %s, not the node's %s", task.Name(), got, home)
		default:
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no thread checked")
	}
}
