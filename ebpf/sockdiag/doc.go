// Package sockdiag lists TCP sockets of one network namespace through
// NETLINK_SOCK_DIAG (inet_diag), with a state filter so a LISTEN-only dump
// never walks established connections. Linux only.
package sockdiag
