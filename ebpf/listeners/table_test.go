package listeners_test

import (
	"slices"
	"testing"

	"github.com/probelet/probelet/ebpf/listeners"
)

func TestAddRemove(t *testing.T) {
	tab := listeners.NewTable()
	tab.MarkVerified(ns)
	key := listeners.PortKey{NetNS: ns, Port: 80}

	if got := tab.Add(l(1, any4)); !slices.Equal(got, []listeners.PortKey{key}) {
		t.Fatalf("Add changed %v, want [%v]", got, key)
	}
	tab.Add(l(1, any4)) // the snapshot and the live hook may both report it
	if n, spaces := tab.Stats(); n != 1 || spaces != 1 {
		t.Fatalf("Stats = %d listeners in %d namespaces after a duplicate add, want 1 in 1", n, spaces)
	}
	tab.Add(l(2, any4)) // SO_REUSEPORT
	if got := tab.PortSKs(key); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("PortSKs = %v, want [1 2]", got)
	}
	if _, ok := tab.Remove(1, 0); !ok {
		t.Fatal("Remove(1) found nothing")
	}
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Reachable {
		t.Fatalf("one of a reuseport pair closed: Lookup = %s, want reachable", got)
	}
	if _, ok := tab.Remove(1, 0); ok {
		t.Fatal("second Remove(1) found a listener")
	}
	if _, ok := tab.Remove(99, 1002); !ok {
		t.Fatal("Remove by cookie of listener 2 found nothing")
	}
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Refused {
		t.Fatalf("both closed: Lookup = %s, want refused", got)
	}
	if tab.HasListeners(ns) {
		t.Fatal("HasListeners = true with none left")
	}
}

func TestAddCompletesListenWithoutBind(t *testing.T) {
	tab := listeners.NewTable()
	tab.MarkVerified(ns)
	tab.Add(l(1, any4, port(0)))
	if got := tab.Unresolved(); !slices.Equal(got, []uint32{ns}) {
		t.Fatalf("Unresolved = %v, want [%d]", got, ns)
	}
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Undecided {
		t.Fatalf("port unknown: Lookup = %s, want undecided", got)
	}
	changed := tab.Add(l(1, any4, port(80)))
	want := []listeners.PortKey{{NetNS: ns, Port: 0}, {NetNS: ns, Port: 80}}
	if !slices.Equal(changed, want) {
		t.Fatalf("Add changed %v, want %v", changed, want)
	}
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Reachable {
		t.Fatalf("port known: Lookup = %s, want reachable", got)
	}
	if got := tab.Lookup(ns, podIP, 81); got != listeners.Refused {
		t.Fatalf("other port: Lookup = %s, want refused", got)
	}
	if got := tab.Unresolved(); len(got) != 0 {
		t.Fatalf("Unresolved = %v, want none", got)
	}
}

func TestMarkFull(t *testing.T) {
	tab := listeners.NewTable()
	tab.MarkVerified(ns)
	tab.Add(l(1, any4))
	tab.MarkFull(1, 2, 1)
	if got := tab.Lookup(ns, podIP, 80); got != listeners.CheckQueue {
		t.Fatalf("Lookup = %s, want check-queue", got)
	}
	tab.MarkFull(42, 2, 1) // unknown sockets are ignored
}

func TestSweep(t *testing.T) {
	for _, tc := range []struct {
		name       string
		verified   bool // confirmed, as a probed namespace is
		listening  bool // a listener still open
		probed     bool
		wantHeld   bool
		wantLookup listeners.Verdict
	}{
		{name: "unprobed, last listener closed", wantHeld: false, wantLookup: listeners.Unverified},
		{name: "unprobed, confirmed once, last listener closed", verified: true, wantHeld: false, wantLookup: listeners.Unverified},
		{name: "unprobed, listening", listening: true, wantHeld: true, wantLookup: listeners.Unverified},
		{name: "unprobed, confirmed once, listening", verified: true, listening: true, wantHeld: true, wantLookup: listeners.Reachable},
		{name: "probed, no listeners", verified: true, probed: true, wantHeld: true, wantLookup: listeners.Refused},
		{name: "probed, listening", verified: true, listening: true, probed: true, wantHeld: true, wantLookup: listeners.Reachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := listeners.NewTable()
			if tc.verified {
				tab.MarkVerified(ns)
			}
			tab.Add(l(1, any4))
			if !tc.listening {
				tab.Remove(1, 0)
			}
			if !tab.Holds(ns) {
				t.Fatal("no entry before the sweep")
			}
			dropped := tab.Sweep(func(netns uint32) bool { return tc.probed && netns == ns })
			if got := tab.Holds(ns); got != tc.wantHeld || (dropped == 1) == tc.wantHeld {
				t.Fatalf("after Sweep: held %v (dropped %d), want held %v", got, dropped, tc.wantHeld)
			}
			if got := tab.Lookup(ns, podIP, 80); got != tc.wantLookup {
				t.Errorf("Lookup = %s, want %s", got, tc.wantLookup)
			}
		})
	}
}
