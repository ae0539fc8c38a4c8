//go:build !unix

package tcpprobe

import "syscall"

// setLinger is nil where SO_LINGER cannot be set the unix way; probes
// still work, with the OS's default TIME_WAIT.
var setLinger func(network, address string, c syscall.RawConn) error
