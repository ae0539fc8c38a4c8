package listeners_test

import (
	"testing"

	"github.com/probelet/probelet/ebpf/listeners"
)

// TestSwappedAdoptionSurvivesARemovalDuringADump covers two SO_REUSEPORT
// listeners the table knows without cookies (kernels whose tracing programs
// cannot generate one, MPTCP listeners from the snapshot): a dump lets each
// adopt a cookie, possibly the other's, since sock_diag does not name
// socket pointers. When one closes while the next dump runs, the other must
// stay: only the closing socket's own cookie (the event's) is buried.
func TestSwappedAdoptionSurvivesARemovalDuringADump(t *testing.T) {
	tab := listeners.NewTable()
	a, b := l(1, any4), l(2, any4)
	for _, x := range []listeners.Listener{a, b} {
		x.Cookie = 0
		tab.Add(x)
	}
	// The dump lists b first: a adopts b's cookie and b adopts a's.
	tab.Reconcile(ns, []listeners.Listener{observed(b), observed(a)}, tab.Seq())
	since := tab.Seq() // the next dump starts; it sees only b
	if _, ok := tab.Remove(a.SK, a.Cookie); !ok {
		t.Fatal("a was not in the table")
	}
	tab.Reconcile(ns, []listeners.Listener{observed(b)}, since)
	if got := tab.LookupFresh(ns, podIP, 80); got != listeners.Reachable {
		t.Fatalf("after a closed, podIP:80 = %s, want reachable (b listens)", got)
	}
}
