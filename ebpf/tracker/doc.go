// Package tracker loads tracker.c, the eBPF side of the TCP short-circuit:
// it follows every TCP socket into and out of LISTEN, snapshots the
// listeners that existed before it loaded, and feeds a listeners.Table
// through a ring buffer so that reading it costs no system call. Linux only;
// the bpf2go output is committed so building needs no clang.
package tracker
