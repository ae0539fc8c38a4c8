package sockdiag

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// Wire sizes and constants of include/uapi/linux/{netlink,inet_diag}.h. They
// are spelled out here because x/sys/unix does not carry inet_diag.
const (
	nlmsgHdrLen     = 16
	sockIDLen       = 48 // struct inet_diag_sockid
	reqLen          = 8 + sockIDLen
	msgLen          = 4 + sockIDLen + 20 // struct inet_diag_msg
	nlmRequest      = 0x1
	nlmDump         = 0x300
	sockDiagByFam   = 20 // SOCK_DIAG_BY_FAMILY
	ipprotoTCP      = 6
	afInet          = 2
	afInet6         = 10
	attrSkV6Only    = 11 // INET_DIAG_SKV6ONLY
	rtattrHeaderLen = 4
)

// encodeRequest builds an inet_diag_req_v2 dump request for one family.
func encodeRequest(seq uint32, family uint8, states uint32) []byte {
	b := make([]byte, nlmsgHdrLen+reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], sockDiagByFam)
	ne.PutUint16(b[6:], nlmRequest|nlmDump)
	ne.PutUint32(b[8:], seq)
	r := b[nlmsgHdrLen:]
	r[0] = family
	r[1] = ipprotoTCP
	ne.PutUint32(r[4:], states)
	return b
}

// decodeMsg parses one inet_diag_msg and its attributes.
func decodeMsg(b []byte) (Socket, error) {
	if len(b) < msgLen {
		return Socket{}, fmt.Errorf("sock_diag: short inet_diag_msg: %d bytes", len(b))
	}
	ne := binary.NativeEndian
	s := Socket{Family: b[0], State: b[1]}
	id := b[4 : 4+sockIDLen]
	s.Port = binary.BigEndian.Uint16(id[0:])
	peerPort := binary.BigEndian.Uint16(id[2:])
	switch s.Family {
	case afInet:
		s.Addr = netip.AddrFrom4([4]byte(id[4:8]))
		s.Peer = netip.AddrPortFrom(netip.AddrFrom4([4]byte(id[20:24])), peerPort)
	case afInet6:
		s.Addr = netip.AddrFrom16([16]byte(id[4:20]))
		s.Peer = netip.AddrPortFrom(netip.AddrFrom16([16]byte(id[20:36])), peerPort)
	default:
		return Socket{}, fmt.Errorf("sock_diag: unexpected family %d", s.Family)
	}
	s.BoundDev = int32(ne.Uint32(id[36:]))
	s.Cookie = uint64(ne.Uint32(id[40:])) | uint64(ne.Uint32(id[44:]))<<32
	tail := b[4+sockIDLen:]
	s.Queue = ne.Uint32(tail[4:])
	s.Backlog = ne.Uint32(tail[8:])
	return s, decodeAttrs(b[msgLen:], &s)
}

// decodeAttrs reads the attributes that follow inet_diag_msg.
func decodeAttrs(b []byte, s *Socket) error {
	ne := binary.NativeEndian
	for len(b) >= rtattrHeaderLen {
		l := int(ne.Uint16(b[0:]))
		if l < rtattrHeaderLen || l > len(b) {
			return fmt.Errorf("sock_diag: bad attribute length %d", l)
		}
		if ne.Uint16(b[2:]) == attrSkV6Only && l > rtattrHeaderLen {
			s.V6Only = b[rtattrHeaderLen] != 0
		}
		l = (l + 3) &^ 3
		if l > len(b) {
			break
		}
		b = b[l:]
	}
	return nil
}

// decodeError turns an NLMSG_ERROR payload into an error (nil for an ack).
func decodeError(b []byte) error {
	if len(b) < 4 {
		return errors.New("sock_diag: short netlink error")
	}
	code := int32(binary.NativeEndian.Uint32(b))
	if code == 0 {
		return nil
	}
	return fmt.Errorf("sock_diag: %w", syscall.Errno(-code))
}
