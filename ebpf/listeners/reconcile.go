package listeners

// Drift counts the differences Reconcile repaired.
type Drift struct {
	// Missing listeners were in the kernel but not in the table.
	Missing int
	// Stale listeners were in the table but no longer in the kernel.
	Stale int
	// Ports lists the ports whose listener set changed.
	Ports []PortKey
}

// Count is the number of repaired differences.
func (d Drift) Count() int { return d.Missing + d.Stale }

// Reconcile makes namespace netns's listeners equal to observed, a complete
// sock_diag dump started when the table's sequence was since, and marks the
// namespace verified. Changes the table saw after since win over the dump.
// Queue lengths are refreshed from the dump.
func (t *Table) Reconcile(netns uint32, observed []Listener, since uint64) Drift {
	t.mu.Lock()
	defer t.mu.Unlock()
	sp := t.spaceFor(netns)
	claimed := make([]bool, len(observed))
	byCookie := make(map[uint64]int, len(observed))
	for i, o := range observed {
		byCookie[o.Cookie] = i
	}
	var d Drift
	for _, l := range sp.all() {
		i, ok := byCookie[l.Cookie]
		if l.Cookie == 0 {
			i, ok = t.adoptable(l, observed, claimed)
		}
		switch {
		case ok && !claimed[i]:
			claimed[i] = true
			t.refresh(l, observed[i])
		case l.seq <= since:
			t.unlink(l)
			d.Stale++
			d.Ports = append(d.Ports, PortKey{netns, l.Port})
		}
	}
	for i, o := range observed {
		if claimed[i] || t.graves.after(o.Cookie, since) || t.byCookie[o.Cookie] != nil {
			continue
		}
		n := o
		n.NetNS, n.SK, n.Full, n.seq = netns, 0, o.Queue > o.Backlog, t.seq+1
		t.insert(&n)
		d.Missing++
		d.Ports = append(d.Ports, PortKey{netns, n.Port})
	}
	sp.verified = true
	t.seq++
	sp.reconciled = t.seq
	return d
}

// adoptable finds the unclaimed observation that a listener without a
// cookie (an MPTCP listener from the snapshot, a listen() without bind())
// must be: same address and device, and the same port once it has one.
func (t *Table) adoptable(l *Listener, observed []Listener, claimed []bool) (int, bool) {
	for i, o := range observed {
		if claimed[i] || t.byCookie[o.Cookie] != nil || o.Addr != l.Addr || o.BoundDev != l.BoundDev {
			continue
		}
		if l.Port == 0 || l.Port == o.Port {
			return i, true
		}
	}
	return 0, false
}

// refresh takes the dump's view of a listener the table already has.
func (t *Table) refresh(l *Listener, o Listener) {
	if l.Cookie != o.Cookie || l.Port != o.Port {
		t.unlink(l)
		l.Cookie, l.Port = o.Cookie, o.Port
		t.insert(l)
	}
	l.Queue, l.Backlog, l.Full = o.Queue, o.Backlog, o.Queue > o.Backlog
}

// all returns the space's listeners as a slice safe to mutate the space
// while iterating.
func (sp *space) all() []*Listener {
	out := make([]*Listener, 0, sp.count)
	for _, ls := range sp.ports {
		out = append(out, ls...)
	}
	return out
}
