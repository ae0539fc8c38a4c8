package listeners_test

import (
	"net/netip"
	"testing"

	"github.com/probelet/probelet/ebpf/listeners"
)

const ns = 4026532000

var (
	podIP   = netip.MustParseAddr("10.0.0.5")
	podIP6  = netip.MustParseAddr("fd00::5")
	any4    = netip.IPv4Unspecified()
	any6    = netip.IPv6Unspecified()
	local4  = netip.MustParseAddr("127.0.0.1")
	mapped  = netip.MustParseAddr("::ffff:10.0.0.5")
	mapped0 = netip.MustParseAddr("::ffff:0.0.0.0")
)

// l builds a watched listener on port 80 with a free accept queue.
func l(sk uint64, addr netip.Addr, mods ...func(*listeners.Listener)) listeners.Listener {
	x := listeners.Listener{SK: sk, Cookie: sk + 1000, NetNS: ns, Addr: addr, Port: 80, Backlog: 128}
	for _, m := range mods {
		m(&x)
	}
	return x
}

func v6only(x *listeners.Listener)    { x.V6Only = true }
func full(x *listeners.Listener)      { x.Full, x.Queue, x.Backlog = true, 2, 1 }
func drained(x *listeners.Listener)   { x.Full, x.Queue, x.Backlog = true, 0, 1 }
func boundDev(x *listeners.Listener)  { x.BoundDev = 3 }
func unwatched(x *listeners.Listener) { x.SK = 0 }
func port(p uint16) func(*listeners.Listener) {
	return func(x *listeners.Listener) { x.Port = p }
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name      string
		listeners []listeners.Listener
		dst       netip.Addr
		want      listeners.Verdict
		wantFresh listeners.Verdict
	}{
		{"no listener is refused", nil, podIP, listeners.Refused, listeners.Refused},
		{"other port is refused", []listeners.Listener{l(1, any4, port(81))}, podIP, listeners.Refused, listeners.Refused},
		{"0.0.0.0 reaches the pod IP", []listeners.Listener{l(1, any4)}, podIP, listeners.Reachable, listeners.Reachable},
		{"0.0.0.0 does not take IPv6", []listeners.Listener{l(1, any4)}, podIP6, listeners.Refused, listeners.Refused},
		{"exact pod IP", []listeners.Listener{l(1, podIP)}, podIP, listeners.Reachable, listeners.Reachable},
		{"127.0.0.1 only is refused", []listeners.Listener{l(1, local4)}, podIP, listeners.Refused, listeners.Refused},
		{"another IP is refused", []listeners.Listener{l(1, netip.MustParseAddr("10.0.0.6"))}, podIP, listeners.Refused, listeners.Refused},
		{":: takes IPv4", []listeners.Listener{l(1, any6)}, podIP, listeners.Reachable, listeners.Reachable},
		{":: takes IPv6", []listeners.Listener{l(1, any6)}, podIP6, listeners.Reachable, listeners.Reachable},
		{":: v6only refuses IPv4", []listeners.Listener{l(1, any6, v6only)}, podIP, listeners.Refused, listeners.Refused},
		{":: v6only takes IPv6", []listeners.Listener{l(1, any6, v6only)}, podIP6, listeners.Reachable, listeners.Reachable},
		{"v4-mapped pod IP takes IPv4", []listeners.Listener{l(1, mapped)}, podIP, listeners.Reachable, listeners.Reachable},
		{"v4-mapped any takes IPv4", []listeners.Listener{l(1, mapped0)}, podIP, listeners.Reachable, listeners.Reachable},
		{"v4-mapped does not take IPv6", []listeners.Listener{l(1, mapped)}, podIP6, listeners.Refused, listeners.Refused},
		{"v4-mapped target is IPv4", []listeners.Listener{l(1, any4)}, mapped, listeners.Reachable, listeners.Reachable},
		{"exact IPv6", []listeners.Listener{l(1, podIP6)}, podIP6, listeners.Reachable, listeners.Reachable},
		{"device-bound match dials", []listeners.Listener{l(1, any4, boundDev)}, podIP, listeners.Undecided, listeners.Undecided},
		{"device-bound non-match is ignored", []listeners.Listener{l(1, local4, boundDev)}, podIP, listeners.Refused, listeners.Refused},
		{"flagged full asks for a refresh", []listeners.Listener{l(1, any4, full)}, podIP, listeners.CheckQueue, listeners.QueueFull},
		{"drained queue is reachable when fresh", []listeners.Listener{l(1, any4, drained)}, podIP, listeners.CheckQueue, listeners.Reachable},
		{"unwatched listener asks for a refresh", []listeners.Listener{l(1, any4, unwatched)}, podIP, listeners.CheckQueue, listeners.Reachable},
		{"reuseport pair", []listeners.Listener{l(1, any4), l(2, any4)}, podIP, listeners.Reachable, listeners.Reachable},
		{"reuseport pair both full", []listeners.Listener{l(1, any4, full), l(2, any4, full)}, podIP, listeners.CheckQueue, listeners.QueueFull},
		{"reuseport pair half full dials", []listeners.Listener{l(1, any4, full), l(2, any4)}, podIP, listeners.CheckQueue, listeners.Undecided},
		{"exact beats a full wildcard", []listeners.Listener{l(1, any4, full), l(2, podIP)}, podIP, listeners.Reachable, listeners.Reachable},
		{"full exact beats a wildcard", []listeners.Listener{l(1, any4), l(2, podIP, full)}, podIP, listeners.CheckQueue, listeners.QueueFull},
		{"AF_INET beats full AF_INET6 wildcard", []listeners.Listener{l(1, any4), l(2, any6, full)}, podIP, listeners.Reachable, listeners.Reachable},
		{"full AF_INET beats AF_INET6 wildcard", []listeners.Listener{l(1, any4, full), l(2, any6)}, podIP, listeners.CheckQueue, listeners.QueueFull},
		{"port being chosen dials on a miss", []listeners.Listener{l(1, any4, port(0))}, podIP, listeners.Undecided, listeners.Undecided},
		{"port being chosen does not hide a match", []listeners.Listener{l(1, any4, port(0)), l(2, any4)}, podIP, listeners.Reachable, listeners.Reachable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := listeners.NewTable()
			for _, x := range tc.listeners {
				tab.Add(x)
			}
			tab.MarkVerified(ns)
			if got := tab.Lookup(ns, tc.dst, 80); got != tc.want {
				t.Errorf("Lookup = %s, want %s", got, tc.want)
			}
			if got := tab.LookupFresh(ns, tc.dst, 80); got != tc.wantFresh {
				t.Errorf("LookupFresh = %s, want %s", got, tc.wantFresh)
			}
		})
	}
}

func TestLookupUnverified(t *testing.T) {
	tab := listeners.NewTable()
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Unverified {
		t.Fatalf("unknown namespace: Lookup = %s, want unverified", got)
	}
	tab.Add(l(1, any4))
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Unverified {
		t.Fatalf("namespace seen only through events: Lookup = %s, want unverified", got)
	}
	tab.MarkVerified(ns)
	tab.Invalidate()
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Unverified {
		t.Fatalf("after Invalidate: Lookup = %s, want unverified", got)
	}
}

func TestLookupManyReusePortListenersAskForRefresh(t *testing.T) {
	tab := listeners.NewTable()
	for i := range listeners.MaxWatched + 1 {
		tab.Add(l(uint64(i+1), any4))
	}
	tab.MarkVerified(ns)
	if got := tab.Lookup(ns, podIP, 80); got != listeners.CheckQueue {
		t.Fatalf("Lookup = %s, want check-queue: the kernel watches only %d", got, listeners.MaxWatched)
	}
	if got := len(tab.PortSKs(listeners.PortKey{NetNS: ns, Port: 80})); got != listeners.MaxWatched {
		t.Fatalf("PortSKs returned %d, want %d", got, listeners.MaxWatched)
	}
}

func BenchmarkLookup(b *testing.B) {
	tab := listeners.NewTable()
	for i := range 20 {
		x := l(uint64(i+1), any4, port(uint16(8000+i)))
		tab.Add(x)
	}
	tab.MarkVerified(ns)
	b.ReportAllocs()
	for b.Loop() {
		if tab.Lookup(ns, podIP, 8010) != listeners.Reachable {
			b.Fatal("not reachable")
		}
	}
}
