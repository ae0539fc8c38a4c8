package tracker

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/probelet/probelet/ebpf/listeners"
)

func TestEventLayoutMatchesC(t *testing.T) {
	if got := unsafe.Sizeof(trackerEvent{}); got != eventSize {
		t.Fatalf("sizeof(struct event) = %d, decoder expects %d", got, eventSize)
	}
	if got := len(trackerPortVal{}.Sk); got != listeners.MaxWatched {
		t.Fatalf("MAX_PORT_LISTENERS = %d, listeners.MaxWatched = %d", got, listeners.MaxWatched)
	}
}

func TestDecodeEvent(t *testing.T) {
	addr6 := netip.MustParseAddr("fd00::5").As16()
	tests := []struct {
		name string
		in   trackerEvent
		want listeners.Listener
	}{
		{
			"IPv4 listener",
			trackerEvent{Sk: 0xffff0001, Cookie: 7, Netns: 4026532000, Addr: [16]uint8{10, 0, 0, 5}, Port: 8080, Family: afInet, Kind: kindAdd, AckBacklog: 2, MaxAckBacklog: 1},
			listeners.Listener{SK: 0xffff0001, Cookie: 7, NetNS: 4026532000, Addr: netip.MustParseAddr("10.0.0.5"), Port: 8080, Queue: 2, Backlog: 1, Full: true},
		},
		{
			"IPv6 v6only on a device",
			trackerEvent{Sk: 2, Cookie: 8, Netns: 1, Addr: addr6, Port: 80, Family: afInet6, Kind: kindAdd, V6only: 1, BoundDevIf: 3},
			listeners.Listener{SK: 2, Cookie: 8, NetNS: 1, Addr: netip.MustParseAddr("fd00::5"), Port: 80, V6Only: true, BoundDev: 3},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := binary.Write(&buf, binary.NativeEndian, tc.in); err != nil {
				t.Fatal(err)
			}
			e, err := decodeEvent(buf.Bytes())
			if err != nil {
				t.Fatalf("decodeEvent: %v", err)
			}
			if e.kind != tc.in.Kind {
				t.Errorf("kind = %d, want %d", e.kind, tc.in.Kind)
			}
			got, err := e.listener()
			if err != nil || got != tc.want {
				t.Errorf("listener() = %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestDecodeEventRejectsBadSamples(t *testing.T) {
	if _, err := decodeEvent(make([]byte, eventSize-1)); err == nil {
		t.Error("short sample decoded without error")
	}
	e, err := decodeEvent(make([]byte, eventSize))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.listener(); err == nil {
		t.Error("family 0 converted without error")
	}
}
