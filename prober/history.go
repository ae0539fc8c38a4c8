package prober

// history is a fixed-size ring of recent probe runs; adding never allocates.
type history struct {
	buf  []ProbeRecord
	next int
	full bool
}

func newHistory(n int) history {
	return history{buf: make([]ProbeRecord, n)}
}

// add records r, overwriting the oldest run when full.
func (h *history) add(r ProbeRecord) {
	if len(h.buf) == 0 {
		return
	}
	h.buf[h.next] = r
	h.next++
	if h.next == len(h.buf) {
		h.next, h.full = 0, true
	}
}

// records returns a copy of the runs, oldest first.
func (h *history) records() []ProbeRecord {
	if !h.full {
		return append([]ProbeRecord(nil), h.buf[:h.next]...)
	}
	out := make([]ProbeRecord, 0, len(h.buf))
	out = append(out, h.buf[h.next:]...)
	return append(out, h.buf[:h.next]...)
}
