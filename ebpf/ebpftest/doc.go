// Package ebpftest builds real network namespaces, each wired to the host
// by a veth pair with an IPv4 and an IPv6 address, and real listening
// sockets inside them, for the TCP short-circuit's tests and benchmarks.
// It needs root and iproute2. Linux only.
package ebpftest
