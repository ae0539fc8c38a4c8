package listeners

import (
	"net/netip"
	"sync"
)

// tombstoneLimit bounds how many recent removals Reconcile remembers.
const tombstoneLimit = 4096

// Table holds the listeners of every network namespace. Lookups take a read
// lock and allocate nothing; the tracker's event loop and reconciliation
// write. The zero value is not usable; call NewTable.
type Table struct {
	mu       sync.RWMutex
	seq      uint64
	bySK     map[uint64]*Listener
	byCookie map[uint64]*Listener
	spaces   map[uint32]*space
	graves   tombstones
}

// space is one network namespace's listeners.
type space struct {
	ports      map[uint16][]*Listener
	count      int
	portless   int  // listeners whose port is not known yet
	cookieless int  // listeners whose cookie is not known yet
	verified   bool // the listener set was confirmed (sock_diag or snapshot)
	// changed is the table sequence of the last listener added to or
	// removed from the space, reconciled the sequence its last Reconcile
	// ended at.
	changed, reconciled uint64
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{
		bySK:     make(map[uint64]*Listener),
		byCookie: make(map[uint64]*Listener),
		spaces:   make(map[uint32]*space),
		graves:   newTombstones(tombstoneLimit),
	}
}

// Lookup returns what a connect to dst:port in namespace netns would do
// according to the table. It never blocks on I/O.
func (t *Table) Lookup(netns uint32, dst netip.Addr, port uint16) Verdict {
	return t.lookup(netns, dst, port, false)
}

// LookupFresh is Lookup after the namespace's queues were refreshed
// (SetQueues): queue lengths are trusted, so it never says CheckQueue.
func (t *Table) LookupFresh(netns uint32, dst netip.Addr, port uint16) Verdict {
	return t.lookup(netns, dst, port, true)
}

func (t *Table) lookup(netns uint32, dst netip.Addr, port uint16, fresh bool) Verdict {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sp := t.spaces[netns]
	if sp == nil || !sp.verified {
		return Unverified
	}
	return decide(sp.ports[port], dst, sp.portless > 0, fresh)
}

// HasListeners reports whether namespace netns has at least one listener.
// A listening socket holds a reference on its namespace, so the namespace
// is alive.
func (t *Table) HasListeners(netns uint32) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sp := t.spaces[netns]
	return sp != nil && sp.count > 0
}

// Settled reports whether namespace netns's listeners are as its last
// Reconcile left them: confirmed there, every port and cookie known, and
// no listener added or removed since. A dump of a settled namespace can
// only find what the table missed, which lost events alone cause, and
// lost events invalidate the table (Invalidate unsettles every namespace).
func (t *Table) Settled(netns uint32) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sp := t.spaces[netns]
	return sp != nil && sp.verified && sp.reconciled != 0 && sp.changed <= sp.reconciled &&
		sp.portless == 0 && sp.cookieless == 0
}

// Portless reports whether namespace netns has a listener whose port is not
// known yet (listen() without bind() in progress).
func (t *Table) Portless(netns uint32) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sp := t.spaces[netns]
	return sp != nil && sp.portless > 0
}

// Unresolved lists the namespaces with a listener whose port or cookie is
// not known yet.
func (t *Table) Unresolved() []uint32 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []uint32
	for ns, sp := range t.spaces {
		if sp.portless > 0 || sp.cookieless > 0 {
			out = append(out, ns)
		}
	}
	return out
}

// Seq returns the table's change counter; pass it to Reconcile when a dump
// starts so that changes that raced with the dump are kept.
func (t *Table) Seq() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.seq
}

// Stats returns the number of listeners and of namespaces with listeners.
func (t *Table) Stats() (listeners, namespaces int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, sp := range t.spaces {
		if sp.count > 0 {
			namespaces++
		}
		listeners += sp.count
	}
	return listeners, namespaces
}

// PortSKs returns the kernel socket pointers of the listeners on key, at
// most MaxWatched, for the kernel's accept-queue watch.
func (t *Table) PortSKs(key PortKey) []uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sp := t.spaces[key.NetNS]
	if sp == nil {
		return nil
	}
	var out []uint64
	for _, l := range sp.ports[key.Port] {
		if l.SK != 0 && len(out) < MaxWatched {
			out = append(out, l.SK)
		}
	}
	return out
}

// MarkVerified records that namespace netns's listener set is complete
// without a sock_diag confirmation (used when sock_diag is unavailable).
func (t *Table) MarkVerified(netns uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.spaceFor(netns).verified = true
}

// Invalidate forgets every confirmation, e.g. after events were lost.
func (t *Table) Invalidate() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, sp := range t.spaces {
		sp.verified = false
	}
}

// Sweep drops the entry of every namespace without listeners unless keep
// says it is probed. The tracker sees every listener on the node, so each
// pod that ever listened leaves an entry behind when its last listener
// goes; a probed namespace's entry holds its confirmation. It returns how
// many entries it dropped.
func (t *Table) Sweep(keep func(netns uint32) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	dropped := 0
	for ns, sp := range t.spaces {
		if sp.count == 0 && !keep(ns) {
			delete(t.spaces, ns)
			dropped++
		}
	}
	return dropped
}

// Holds reports whether the table holds an entry for namespace netns, with
// listeners or not.
func (t *Table) Holds(netns uint32) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.spaces[netns] != nil
}

func (t *Table) spaceFor(netns uint32) *space {
	sp := t.spaces[netns]
	if sp == nil {
		sp = &space{ports: make(map[uint16][]*Listener)}
		t.spaces[netns] = sp
	}
	return sp
}
