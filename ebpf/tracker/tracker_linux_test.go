package tracker_test

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/ebpf/listeners"
	"github.com/probelet/probelet/ebpf/netns"
	"github.com/probelet/probelet/ebpf/tracker"
)

var loopback = netip.MustParseAddr("127.0.0.1")

// start loads a tracker for the test and returns it with the inode of the
// test's own network namespace, marked verified so lookups answer.
func start(t *testing.T, opts ...tracker.Option) (*tracker.Tracker, uint32) {
	t.Helper()
	ebpftest.RequireRoot(t)
	tr, err := tracker.New(context.Background(), opts...)
	if err != nil {
		t.Fatalf("tracker.New: %v", err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ino, err := netns.Inode("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	tr.Table().MarkVerified(ino)
	return tr, ino
}

// featureSets are the paths every kernel test covers: the optional
// capabilities the running kernel offers, and the fallbacks the oldest
// supported kernels take.
var featureSets = []struct {
	name string
	f    tracker.Features
}{
	{"kernel", tracker.AllFeatures},
	{"fallbacks", tracker.NoFeatures},
}

// eachFeatureSet runs test once per feature set, as subtests.
func eachFeatureSet(t *testing.T, test func(t *testing.T, fs tracker.Option)) {
	for _, s := range featureSets {
		t.Run(s.name, func(t *testing.T) { test(t, tracker.WithFeatures(s.f)) })
	}
}

func listen(t *testing.T, c ebpftest.ListenConfig) *ebpftest.Listener {
	t.Helper()
	l, err := ebpftest.Listen("", c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func sync(t *testing.T, tr *tracker.Tracker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

func expect(t *testing.T, tr *tracker.Tracker, ino uint32, port int, want listeners.Verdict) {
	t.Helper()
	if got := tr.Table().Lookup(ino, loopback, uint16(port)); got != want {
		t.Fatalf("Lookup(127.0.0.1:%d) = %s, want %s", port, got, want)
	}
}

func TestFollowsListenAndClose(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs tracker.Option) {
		tr, ino := start(t, fs)
		l := listen(t, ebpftest.ListenConfig{Addr: loopback})
		sync(t, tr)
		expect(t, tr, ino, l.Port, listeners.Reachable)
		l.Close()
		sync(t, tr)
		expect(t, tr, ino, l.Port, listeners.Refused)
	})
}

func TestFollowsShutdown(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs tracker.Option) {
		tr, ino := start(t, fs)
		l := listen(t, ebpftest.ListenConfig{Addr: loopback})
		sync(t, tr)
		expect(t, tr, ino, l.Port, listeners.Reachable)
		if err := l.Shutdown(); err != nil {
			t.Fatal(err)
		}
		sync(t, tr)
		expect(t, tr, ino, l.Port, listeners.Refused)
	})
}

func TestSnapshotFindsListenersFromBeforeLoad(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs tracker.Option) {
		ebpftest.RequireRoot(t)
		plain := listen(t, ebpftest.ListenConfig{Addr: loopback})
		// Go listens with MPTCP where the kernel has it; the snapshot must
		// look through to the TCP subflow.
		goLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer goLn.Close()
		tr, ino := start(t, fs)
		expect(t, tr, ino, plain.Port, listeners.Reachable)
		expect(t, tr, ino, goLn.Addr().(*net.TCPAddr).Port, listeners.Reachable)
	})
}

func TestReusePortPairIsCounted(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs tracker.Option) {
		tr, ino := start(t, fs)
		a := listen(t, ebpftest.ListenConfig{Addr: loopback, ReusePort: true})
		b := listen(t, ebpftest.ListenConfig{Addr: loopback, Port: a.Port, ReusePort: true})
		sync(t, tr)
		key := listeners.PortKey{NetNS: ino, Port: uint16(a.Port)}
		if got := len(tr.Table().PortSKs(key)); got != 2 {
			t.Fatalf("%d listeners on the port, want 2", got)
		}
		a.Close()
		sync(t, tr)
		expect(t, tr, ino, a.Port, listeners.Reachable)
		b.Close()
		sync(t, tr)
		expect(t, tr, ino, a.Port, listeners.Refused)
	})
}

func TestListenWithoutBindWithoutExitHook(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs tracker.Option) {
		tr, ino := start(t, fs, tracker.WithoutListenExitHook())
		l := listen(t, ebpftest.ListenConfig{NoBind: true})
		sync(t, tr)
		if got := tr.Table().Unresolved(); !slices.Contains(got, ino) {
			t.Fatalf("Unresolved = %v, want it to hold %d: the port is learned later", got, ino)
		}
		expect(t, tr, ino, l.Port, listeners.Undecided)
	})
}

func TestFullAcceptQueueIsFlagged(t *testing.T) {
	eachFeatureSet(t, func(t *testing.T, fs tracker.Option) {
		tr, ino := start(t, fs)
		l := listen(t, ebpftest.ListenConfig{Addr: loopback, Backlog: 1})
		sync(t, tr)
		// Backlog 1 holds two connections; the kernel then drops SYNs.
		for range 2 {
			c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port)), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		sync(t, tr)
		expect(t, tr, ino, l.Port, listeners.CheckQueue)
		if got := tr.Table().LookupFresh(ino, loopback, uint16(l.Port)); got != listeners.QueueFull {
			t.Fatalf("LookupFresh = %s, want queue-full", got)
		}
	})
}

func TestCloseEndsSync(t *testing.T) {
	ebpftest.RequireRoot(t)
	tr, err := tracker.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := tr.Sync(context.Background()); err == nil {
		t.Fatal("Sync after Close succeeded")
	}
}
