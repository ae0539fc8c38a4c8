package listeners_test

import (
	"testing"

	"github.com/probelet/probelet/ebpf/listeners"
)

// observed is how sock_diag reports l: no SK, cookie and queue known.
func observed(x listeners.Listener) listeners.Listener {
	x.SK = 0
	return x
}

func TestReconcile(t *testing.T) {
	tests := []struct {
		name      string
		table     []listeners.Listener
		dump      []listeners.Listener
		wantDrift listeners.Drift
		want      listeners.Verdict // Lookup of podIP:80 afterwards
	}{
		{"in sync", []listeners.Listener{l(1, any4)}, []listeners.Listener{observed(l(1, any4))}, listeners.Drift{}, listeners.Reachable},
		{"missing listener is added", nil, []listeners.Listener{observed(l(1, any4))}, listeners.Drift{Missing: 1}, listeners.CheckQueue},
		{"stale listener is removed", []listeners.Listener{l(1, any4)}, nil, listeners.Drift{Stale: 1}, listeners.Refused},
		{"full queue is seen", []listeners.Listener{l(1, any4)}, []listeners.Listener{observed(l(1, any4, full))}, listeners.Drift{}, listeners.CheckQueue},
		{"drained queue clears the flag", []listeners.Listener{l(1, any4, full)}, []listeners.Listener{observed(l(1, any4))}, listeners.Drift{}, listeners.Reachable},
		{
			"cookie-less snapshot entry adopts its cookie",
			[]listeners.Listener{func() listeners.Listener { x := l(1, any4); x.Cookie = 0; return x }()},
			[]listeners.Listener{observed(l(1, any4))}, listeners.Drift{}, listeners.Reachable,
		},
		{
			"port-less listener learns its port",
			[]listeners.Listener{l(1, any4, port(0))},
			[]listeners.Listener{observed(l(1, any4))}, listeners.Drift{}, listeners.Reachable,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tab := listeners.NewTable()
			for _, x := range tc.table {
				tab.Add(x)
			}
			got := tab.Reconcile(ns, tc.dump, tab.Seq())
			if got.Missing != tc.wantDrift.Missing || got.Stale != tc.wantDrift.Stale || len(got.Ports) != got.Count() {
				t.Errorf("Reconcile drift = %+v, want %+v", got, tc.wantDrift)
			}
			if got := tab.Lookup(ns, podIP, 80); got != tc.want {
				t.Errorf("Lookup after Reconcile = %s, want %s", got, tc.want)
			}
			if again := tab.Reconcile(ns, tc.dump, tab.Seq()); again.Count() != 0 {
				t.Errorf("second Reconcile drift = %+v, want none", again)
			}
		})
	}
}

func TestReconcileKeepsChangesThatRacedTheDump(t *testing.T) {
	tab := listeners.NewTable()
	tab.Add(l(1, any4))
	since := tab.Seq()
	// While the dump runs: listener 1 closes, listener 2 opens.
	dump := []listeners.Listener{observed(l(1, any4))}
	tab.Remove(1, 1001)
	tab.Add(l(2, any4, port(81)))

	if d := tab.Reconcile(ns, dump, since); d.Count() != 0 {
		t.Fatalf("Reconcile drift = %+v, want none", d)
	}
	if got := tab.Lookup(ns, podIP, 80); got != listeners.Refused {
		t.Errorf("closed during the dump: Lookup = %s, want refused", got)
	}
	if got := tab.Lookup(ns, podIP, 81); got != listeners.Reachable {
		t.Errorf("opened during the dump: Lookup = %s, want reachable", got)
	}
}
