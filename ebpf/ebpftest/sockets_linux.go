package ebpftest

import (
	"net/netip"

	"github.com/probelet/probelet/ebpf/sockdiag"
)

// allStates selects every TCP state in a sock_diag dump.
const allStates = 0xfff

// SocketsLeft counts the TCP sockets that connections to dst in n left
// behind (TIME_WAIT and any other non-listening state): on the host side,
// sockets whose peer is dst; inside n, sockets on dst's port other than the
// listener.
func (n *NetNS) SocketsLeft(dst netip.AddrPort) (int, error) {
	host, err := sockdiag.Open()
	if err != nil {
		return 0, err
	}
	defer host.Close()
	hs, err := host.TCP(allStates)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, s := range hs {
		if s.Peer == dst {
			count++
		}
	}
	pod, err := sockdiag.OpenIn(n.Path)
	if err != nil {
		return 0, err
	}
	defer pod.Close()
	ps, err := pod.TCP(allStates &^ (1 << sockdiag.StateListen))
	if err != nil {
		return 0, err
	}
	for _, s := range ps {
		if s.Port == dst.Port() {
			count++
		}
	}
	return count, nil
}
