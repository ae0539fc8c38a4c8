package grpcwire

import (
	"io"
)

// A call's frames are metered as the Framer reads them, before it parses
// them, so frames it handles inside another (the CONTINUATIONs of a
// header block) count as well. Each frame costs the call frameCost bytes
// of an allowance that its payload pays back byte for byte: the frames of
// a reply (grpc-go writes up to 16 KiB in each) cost nothing, and frames
// that carry nothing or next to nothing — empty DATA or CONTINUATION,
// WINDOW_UPDATE, PING, PRIORITY, unknown types — end the call after about
// freeFrames of them. Unbounded, a flood of them held a probe runner for
// tens of milliseconds of CPU per call, though each needs no answer
// (Envoy bounds the same frames for the same reason).
const (
	// freeFrames is what a call may read without payload: twenty times
	// what a small reply takes (SETTINGS, its ack, a PING, WINDOW_UPDATEs,
	// HEADERS, DATA, trailers), and over MaxAnswered, whose own bound
	// speaks first in a flood of frames that need answers.
	freeFrames = 200
	frameCost  = 1 << 10
	// frameHeaderLen is an HTTP/2 frame's header (RFC 9113 §4.1).
	frameHeaderLen = 9
)

// meter reads what the server sent, bounding a call's bytes (budget) and
// its frames (the allowance above). Frame boundaries are followed from
// the first byte the connection reads: frames run back to back.
type meter struct {
	r         io.Reader
	budget    int64 // bytes a call may read
	left      int64
	allowance int64
	overBytes error

	head    [frameHeaderLen]byte // the frame header being read
	nhead   int
	payload int // of the current frame, still to come
}

func newMeter(r io.Reader, budget int64) *meter {
	m := &meter{r: r, budget: budget, overBytes: errOverBudget(budget)}
	m.reset()
	return m
}

// reset gives a new call its own bounds.
func (m *meter) reset() {
	m.left = m.budget
	m.allowance = freeFrames * frameCost
}

func (m *meter) Read(p []byte) (int, error) {
	if m.left <= 0 {
		return 0, m.overBytes
	}
	if m.allowance < 0 {
		return 0, errFrames
	}
	if int64(len(p)) > m.left {
		p = p[:m.left]
	}
	n, err := m.r.Read(p)
	m.left -= int64(n)
	m.count(p[:n])
	return n, err
}

// count follows the frames in b, charging each as its header completes.
func (m *meter) count(b []byte) {
	for len(b) > 0 {
		if m.payload > 0 {
			k := min(len(b), m.payload)
			m.payload -= k
			b = b[k:]
			continue
		}
		k := copy(m.head[m.nhead:], b)
		m.nhead += k
		b = b[k:]
		if m.nhead == frameHeaderLen {
			m.nhead = 0
			m.payload = int(m.head[0])<<16 | int(m.head[1])<<8 | int(m.head[2])
			m.allowance += int64(m.payload) - frameCost
		}
	}
}
