// Package rawtcp is the quiet I/O's TCP: a probe's connect and close made
// of raw, non-blocking system calls that wait only in the Go netpoller,
// with the kubelet's SO_LINGER {1, 1} and its close (a FIN, or a RST with
// data unread), and net's answers word for word.
//
// Why: every call through the runtime's system-call path wakes its
// monitor thread (sysmon) in an otherwise idle process, which then naps
// every 20 µs for as long as the process is busy; with net's dialer and
// connection, that is most of a probe's thread wake-ups (hack/bench/engine).
// A connect to a pod on this node mostly completes within the connecting
// call (the kernel runs both ends of a loopback or veth handshake in it),
// so Start answers without a goroutine or a wait at all.
//
// Linux only; elsewhere the package is empty and its users run net.
package rawtcp
