package listeners

import "slices"

// Add records a listener or updates the one with the same SK (or, for a
// listener first learned from sock_diag, the same cookie): listen() without
// bind() reports the socket again once its port is known. It returns the
// ports whose listener set changed.
func (t *Table) Add(l Listener) []PortKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	cur := t.find(l.SK, l.Cookie)
	if cur == nil {
		n := l
		n.seq = t.seq
		t.insert(&n)
		return []PortKey{{n.NetNS, n.Port}}
	}
	old := PortKey{cur.NetNS, cur.Port}
	t.unlink(cur)
	merge(cur, l)
	cur.seq = t.seq
	t.insert(cur)
	return changed(old, PortKey{cur.NetNS, cur.Port})
}

// Remove deletes the listener with this SK, or else this cookie, and
// returns the port whose listener set changed (ok false if none was found).
func (t *Table) Remove(sk, cookie uint64) (PortKey, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	cur := t.find(sk, cookie)
	if cookie != 0 {
		t.graves.add(cookie, t.seq)
	}
	if cur == nil {
		return PortKey{}, false
	}
	// The event's cookie is the socket's own. The table's may have been
	// adopted from a dump and belong to another listener of the same
	// address and port (see adoptable): bury it only without a better one.
	if cur.Cookie != 0 && (cookie == 0 || cookie == cur.Cookie) {
		t.graves.add(cur.Cookie, t.seq)
	}
	t.unlink(cur)
	return PortKey{cur.NetNS, cur.Port}, true
}

// MarkFull records that the listener with this SK overflowed its accept
// queue. Lookups then ask for a queue refresh before answering.
func (t *Table) MarkFull(sk uint64, queue, backlog uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.bySK[sk]; l != nil {
		l.Queue, l.Backlog, l.Full = queue, backlog, true
	}
}

// merge updates cur with what l knows, keeping what only cur knew.
func merge(cur *Listener, l Listener) {
	if l.SK == 0 {
		l.SK = cur.SK
	}
	if l.Cookie == 0 {
		l.Cookie = cur.Cookie
	}
	if l.Port == 0 {
		l.Port = cur.Port
	}
	l.Full = l.Full || cur.Full
	*cur = l
}

func (t *Table) find(sk, cookie uint64) *Listener {
	if l := t.bySK[sk]; sk != 0 && l != nil {
		return l
	}
	if l := t.byCookie[cookie]; cookie != 0 && l != nil {
		return l
	}
	return nil
}

func (t *Table) insert(l *Listener) {
	if l.SK != 0 {
		t.bySK[l.SK] = l
	}
	if l.Cookie != 0 {
		t.byCookie[l.Cookie] = l
	}
	sp := t.spaceFor(l.NetNS)
	sp.changed = t.seq
	sp.count++
	sp.portless += b2i(l.Port == 0)
	sp.cookieless += b2i(l.Cookie == 0)
	sp.ports[l.Port] = append(sp.ports[l.Port], l)
}

func (t *Table) unlink(l *Listener) {
	if l.SK != 0 && t.bySK[l.SK] == l {
		delete(t.bySK, l.SK)
	}
	if l.Cookie != 0 && t.byCookie[l.Cookie] == l {
		delete(t.byCookie, l.Cookie)
	}
	sp := t.spaces[l.NetNS]
	if sp == nil {
		return
	}
	sp.changed = t.seq
	sp.count--
	sp.portless -= b2i(l.Port == 0)
	sp.cookieless -= b2i(l.Cookie == 0)
	ls := slices.DeleteFunc(sp.ports[l.Port], func(x *Listener) bool { return x == l })
	if len(ls) == 0 {
		delete(sp.ports, l.Port)
	} else {
		sp.ports[l.Port] = ls
	}
}

func changed(old, cur PortKey) []PortKey {
	if old == cur {
		return []PortKey{cur}
	}
	return []PortKey{old, cur}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
