//go:build unix

package tcpprobe

import "syscall"

// setLinger sets SO_LINGER {on, 1 s} like the kubelet's probe dialer. Zero
// would abort with an RST and lose pending data; one second still closes
// with a FIN but keeps TIME_WAIT short (kubernetes/kubernetes#89898).
// Like the kubelet, a failed setsockopt does not stop the probe: the
// option only tunes cleanup, never the answer.
func setLinger(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER,
			&syscall.Linger{Onoff: 1, Linger: 1})
	})
}
