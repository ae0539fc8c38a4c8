//go:build !linux

package grpcwire

import "net"

// readable: elsewhere a kept connection is found closed by the call that
// uses it.
func readable(net.Conn) bool { return false }
