// Package listeners is the Go-side copy of the node's TCP listening
// sockets, grouped by network namespace and port, and the decision a kernel
// would make for a connect to one of them: reachable, refused, or dropped
// because the accept queue is full. It knows nothing of eBPF or netlink;
// the tracker feeds it, the TCP short-circuit asks it.
package listeners
