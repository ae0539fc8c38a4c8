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

func TestForget(t *testing.T) {
	tab := listeners.NewTable()
	tab.MarkVerified(ns)
	tab.Add(l(1, any4))
	tab.Forget(ns)
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Reachable {
		t.Fatalf("Forget dropped a namespace with listeners: Lookup = %s", got)
	}
	tab.Remove(1, 0)
	tab.Forget(ns)
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Unverified {
		t.Fatalf("after Forget: Lookup = %s, want unverified", got)
	}
}
