package tracker

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/probelet/probelet/ebpf/listeners"
)

// Event kinds, as tracker.c's enum event_kind.
const (
	kindAdd    = 1
	kindRemove = 2
	kindFull   = 3
	kindMarker = 4
)

const (
	afInet  = 2
	afInet6 = 10
)

// eventSize is sizeof(struct event); a test pins it to the bpf2go mirror.
const eventSize = 56

// event is a decoded ring buffer sample.
type event struct {
	kind    uint8
	sk      uint64 // socket pointer; the sequence number of a marker
	cookie  uint64
	netns   uint32
	dev     int32
	queue   uint32
	backlog uint32
	addr    [16]byte
	port    uint16
	family  uint16
	v6only  bool
}

// decodeEvent reads one sample in native byte order, checking its length
// rather than casting it.
func decodeEvent(b []byte) (event, error) {
	if len(b) < eventSize {
		return event{}, fmt.Errorf("short sample: %d bytes, want %d", len(b), eventSize)
	}
	ne := binary.NativeEndian
	e := event{
		sk:      ne.Uint64(b[0:]),
		cookie:  ne.Uint64(b[8:]),
		netns:   ne.Uint32(b[16:]),
		dev:     int32(ne.Uint32(b[20:])),
		queue:   ne.Uint32(b[24:]),
		backlog: ne.Uint32(b[28:]),
		addr:    [16]byte(b[32:48]),
		port:    ne.Uint16(b[48:]),
		family:  ne.Uint16(b[50:]),
		kind:    b[52],
		v6only:  b[53] != 0,
	}
	return e, nil
}

// listener converts an add event.
func (e event) listener() (listeners.Listener, error) {
	l := listeners.Listener{
		SK: e.sk, Cookie: e.cookie, NetNS: e.netns, Port: e.port,
		BoundDev: e.dev, V6Only: e.v6only, Queue: e.queue, Backlog: e.backlog,
		Full: e.queue > e.backlog,
	}
	switch e.family {
	case afInet:
		l.Addr = netip.AddrFrom4([4]byte(e.addr[:4]))
	case afInet6:
		l.Addr = netip.AddrFrom16(e.addr)
	default:
		return l, fmt.Errorf("listener %#x: unexpected family %d", e.sk, e.family)
	}
	return l, nil
}
