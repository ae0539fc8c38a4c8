//go:build !linux

// Package rawconn is a net.Conn on raw system calls, on Linux; elsewhere
// DialUnix is net's.
package rawconn

import (
	"context"
	"net"
)

// DialUnix is net's dial where the raw connection is not built.
func DialUnix(ctx context.Context, path string) (net.Conn, error) {
	return new(net.Dialer).DialContext(ctx, "unix", path)
}
