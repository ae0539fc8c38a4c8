//go:build !linux

package podnet

import (
	"context"
	"errors"
	"net"
	"net/netip"
)

// ID identifies a network namespace; only Linux has them.
type ID struct{ Dev, Ino uint64 }

func (ID) String() string { return "" }

// ErrGone is a released namespace's answer.
var ErrGone = errors.New("the pod's network namespace was released (the pod is gone)")

var errNotLinux = errors.New("probes from a pod's network namespace need Linux")

// Pins are Linux's; elsewhere none can be made.
type Pins struct{}

// NewPins fails off Linux.
func NewPins() (*Pins, error) { return nil, errNotLinux }

// Open fails off Linux.
func (*Pins) Open(string, string, netip.Addr) (*Namespace, error) { return nil, errNotLinux }

// Pinned is nothing off Linux.
func (*Pins) Pinned() int { return 0 }

// Namespace is Linux's.
type Namespace struct{}

func (*Namespace) ID() ID                            { return ID{} }
func (*Namespace) Path() string                      { return "" }
func (*Namespace) String() string                    { return "" }
func (*Namespace) Close() error                      { return nil }
func (*Namespace) Socket(int, int, int) (int, error) { return -1, errNotLinux }
func (*Namespace) TCPSocket(netip.Addr) (int, error) { return -1, errNotLinux }
func (*Namespace) DialTCP(context.Context, netip.AddrPort) (net.Conn, error) {
	return nil, errNotLinux
}
