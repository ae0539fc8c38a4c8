package listeners

// tombstones remembers the cookies of recently removed listeners and when
// (table sequence) they went, so that a sock_diag dump taken just before a
// close does not bring the listener back. It forgets the oldest first.
type tombstones struct {
	at    map[uint64]uint64
	order []uint64
	limit int
}

func newTombstones(limit int) tombstones {
	return tombstones{at: make(map[uint64]uint64), limit: limit}
}

func (g *tombstones) add(cookie, seq uint64) {
	if _, ok := g.at[cookie]; !ok {
		g.order = append(g.order, cookie)
	}
	g.at[cookie] = seq
	if len(g.order) > g.limit {
		delete(g.at, g.order[0])
		g.order = g.order[1:]
	}
}

// after reports whether cookie was removed after sequence since.
func (g *tombstones) after(cookie, since uint64) bool {
	seq, ok := g.at[cookie]
	return ok && seq > since
}
