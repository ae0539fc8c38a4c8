// Package ebpf answers TCP probes from the kernel's table of listening
// sockets instead of dialing: no socket, no SYN, no TIME_WAIT, no "EOF" in
// the application's log, and the same answer a kubelet-style dial would
// give. TCPProber implements probe.TCPProber; it uses the eBPF listener
// tracker (package tracker) when it loads and falls back to a real dial for
// everything the table cannot decide.
package ebpf
