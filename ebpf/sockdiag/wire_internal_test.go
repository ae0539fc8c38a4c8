package sockdiag

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"syscall"
	"testing"
)

// inetDiagMsg builds an inet_diag_msg with optional attributes.
func inetDiagMsg(family uint8, addr []byte, port uint16, cookie uint64, attrs ...[]byte) []byte {
	b := make([]byte, msgLen)
	ne := binary.NativeEndian
	b[0], b[1] = family, StateListen
	binary.BigEndian.PutUint16(b[4:], port)
	copy(b[8:], addr)
	ne.PutUint32(b[4+36:], 2) // idiag_if
	ne.PutUint32(b[4+40:], uint32(cookie))
	ne.PutUint32(b[4+44:], uint32(cookie>>32))
	ne.PutUint32(b[4+sockIDLen+4:], 3) // rqueue
	ne.PutUint32(b[4+sockIDLen+8:], 5) // wqueue
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

func attr(typ uint16, data ...byte) []byte {
	b := make([]byte, rtattrHeaderLen, 8)
	binary.NativeEndian.PutUint16(b, uint16(rtattrHeaderLen+len(data)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestDecodeMsg(t *testing.T) {
	v6 := netip.MustParseAddr("fd00::1").As16()
	tests := []struct {
		name    string
		in      []byte
		want    Socket
		wantErr bool
	}{
		{"IPv4", inetDiagMsg(afInet, []byte{10, 0, 0, 5}, 8080, 1<<40|7),
			Socket{Family: afInet, State: StateListen, Addr: netip.MustParseAddr("10.0.0.5"), Port: 8080, Peer: netip.MustParseAddrPort("0.0.0.0:0"), BoundDev: 2, Cookie: 1<<40 | 7, Queue: 3, Backlog: 5}, false},
		{"IPv6 v6only", inetDiagMsg(afInet6, v6[:], 80, 9, attr(attrSkV6Only, 1)),
			Socket{Family: afInet6, State: StateListen, Addr: netip.MustParseAddr("fd00::1"), Port: 80, Peer: netip.MustParseAddrPort("[::]:0"), BoundDev: 2, Cookie: 9, Queue: 3, Backlog: 5, V6Only: true}, false},
		{"other attributes are skipped", inetDiagMsg(afInet6, v6[:], 80, 9, attr(4, 'c', 'u', 'b', 'i', 'c'), attr(attrSkV6Only, 0)),
			Socket{Family: afInet6, State: StateListen, Addr: netip.MustParseAddr("fd00::1"), Port: 80, Peer: netip.MustParseAddrPort("[::]:0"), BoundDev: 2, Cookie: 9, Queue: 3, Backlog: 5}, false},
		{"short message", make([]byte, msgLen-1), Socket{}, true},
		{"unknown family", inetDiagMsg(1, nil, 0, 0), Socket{}, true},
		{"attribute longer than the message", append(inetDiagMsg(afInet, []byte{1, 2, 3, 4}, 1, 1), 0xff, 0, 11, 0), Socket{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeMsg(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestEncodeRequest(t *testing.T) {
	b := encodeRequest(42, afInet6, 1<<StateListen)
	ne := binary.NativeEndian
	if len(b) != nlmsgHdrLen+reqLen || ne.Uint32(b) != uint32(len(b)) {
		t.Fatalf("length %d, header says %d", len(b), ne.Uint32(b))
	}
	if ne.Uint16(b[4:]) != sockDiagByFam || ne.Uint16(b[6:]) != nlmRequest|nlmDump || ne.Uint32(b[8:]) != 42 {
		t.Errorf("bad header % x", b[:nlmsgHdrLen])
	}
	r := b[nlmsgHdrLen:]
	if r[0] != afInet6 || r[1] != ipprotoTCP || ne.Uint32(r[4:]) != 1<<StateListen {
		t.Errorf("bad request % x", r)
	}
}

func TestDecodeError(t *testing.T) {
	b := make([]byte, 4)
	if err := decodeError(b); err != nil {
		t.Errorf("ack decoded as %v", err)
	}
	code := -int32(syscall.EPERM)
	binary.NativeEndian.PutUint32(b, uint32(code))
	if err := decodeError(b); !errors.Is(err, syscall.EPERM) {
		t.Errorf("decodeError = %v, want EPERM", err)
	}
	if err := decodeError(nil); err == nil {
		t.Error("short error decoded as nil")
	}
}
