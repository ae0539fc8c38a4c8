package sockdiag_test

import (
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/ebpf/sockdiag"
	"github.com/probelet/probelet/internal/testutil"
)

// find returns the dumped listener on port.
func find(t *testing.T, socks []sockdiag.Socket, port int) sockdiag.Socket {
	t.Helper()
	for _, s := range socks {
		if int(s.Port) == port {
			return s
		}
	}
	t.Fatalf("no listener on port %d in %+v", port, socks)
	return sockdiag.Socket{}
}

func TestListenersInNamespace(t *testing.T) {
	ebpftest.RequireRoot(t)
	ns, err := ebpftest.NewNetNS(0)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	cases := []struct {
		name string
		cfg  ebpftest.ListenConfig
		want sockdiag.Socket
	}{
		{"IPv4 wildcard", ebpftest.ListenConfig{Addr: netip.IPv4Unspecified(), Backlog: 7},
			sockdiag.Socket{Family: 2, Addr: netip.IPv4Unspecified(), Backlog: 7}},
		{"IPv6 v6only", ebpftest.ListenConfig{Addr: netip.IPv6Unspecified(), V6Only: true},
			sockdiag.Socket{Family: 10, Addr: netip.IPv6Unspecified(), V6Only: true, Backlog: 128}},
		{"pod IP", ebpftest.ListenConfig{Addr: ns.PodIP},
			sockdiag.Socket{Family: 2, Addr: ns.PodIP, Backlog: 128}},
		{"device-bound", ebpftest.ListenConfig{Addr: netip.IPv4Unspecified(), Device: "lo"},
			sockdiag.Socket{Family: 2, Addr: netip.IPv4Unspecified(), BoundDev: 1, Backlog: 128}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ns.Listen(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			socks, err := sockdiag.ListenersIn(ns.Path)
			if err != nil {
				t.Fatalf("ListenersIn: %v", err)
			}
			got := find(t, socks, l.Port)
			want := tc.want
			want.State, want.Port, want.Cookie = sockdiag.StateListen, uint16(l.Port), got.Cookie
			want.Peer = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
			if want.Family == 10 {
				want.Peer = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
			}
			if got != want || got.Cookie == 0 {
				t.Errorf("got  %+v\nwant %+v (and a cookie)", got, want)
			}
		})
	}
}

func TestAcceptQueue(t *testing.T) {
	ebpftest.RequireRoot(t)
	l, err := ebpftest.Listen("", ebpftest.ListenConfig{Addr: netip.MustParseAddr("127.0.0.1"), Backlog: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := sockdiag.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 1; i <= 2; i++ {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(l.Port), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		socks, err := c.TCP(1 << sockdiag.StateListen)
		if err != nil {
			t.Fatal(err)
		}
		s := find(t, socks, l.Port)
		if s.Queue != uint32(i) || s.Backlog != 1 || s.QueueFull() != (i == 2) {
			t.Errorf("after %d connections: queue %d/%d full=%v", i, s.Queue, s.Backlog, s.QueueFull())
		}
	}
}

func TestOpenInMissingNamespace(t *testing.T) {
	if _, err := sockdiag.ListenersIn("/nonexistent/ns/net"); err == nil {
		t.Fatal("ListenersIn of a missing namespace succeeded")
	}
}

func TestTimeWaitPeer(t *testing.T) {
	ebpftest.RequireRoot(t)
	l, err := ebpftest.Listen("", ebpftest.ListenConfig{Addr: netip.MustParseAddr("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Serve(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(l.Port), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	// Whichever side closed first keeps the TIME_WAIT socket.
	c, err := sockdiag.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(l.Port))
	// The FIN handshake completes asynchronously.
	testutil.WaitFor(t, "a TIME_WAIT socket of a connection to "+want.String(), func() bool {
		socks, err := c.TCP(1 << sockdiag.StateTimeWait)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range socks {
			client := s.Peer == want
			server := int(s.Port) == l.Port && s.Peer.Addr() == want.Addr()
			if s.State == sockdiag.StateTimeWait && (client || server) {
				return true
			}
		}
		return false
	})
}
