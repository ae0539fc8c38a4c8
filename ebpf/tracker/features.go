package tracker

import "strings"

// Features are optional kernel capabilities the tracker uses when the
// running kernel has them. Without one, tracker.c takes a path that works
// from Linux 5.10 on; answers are the same either way.
type Features uint8

const (
	// SockFromFile: the snapshot finds each file's socket with
	// bpf_sock_from_file (Linux 5.11) instead of reading the private data
	// of sockfs files.
	SockFromFile Features = 1 << iota
	// TracingCookie: tracing programs give each new listener its socket
	// cookie with bpf_get_socket_cookie (Linux 5.12). Without it the cookie
	// is read where something already generated it, and learned from
	// sock_diag otherwise.
	TracingCookie
	// SnapshotCookie: the snapshot gives the listeners it finds their
	// cookie too, which needs SockFromFile, TracingCookie and a verifier
	// that accepts the socket bpf_sock_from_file leads to as a socket
	// pointer. That is not a matter of release: Linux 6.18.44 types it
	// untrusted and refuses the call. Without it the snapshot's listeners
	// whose cookie nothing generated yet get it from the first sock_diag
	// reconciliation of their namespace.
	SnapshotCookie

	// AllFeatures is every optional capability.
	AllFeatures = SockFromFile | TracingCookie | SnapshotCookie
	// NoFeatures forces the paths of the oldest supported kernels.
	NoFeatures Features = 0
)

var featureNames = []struct {
	f    Features
	name string
}{
	{SockFromFile, "sock_from_file"},
	{TracingCookie, "tracing_cookie"},
	{SnapshotCookie, "snapshot_cookie"},
}

// Has reports whether f includes every capability in g.
func (f Features) Has(g Features) bool { return f&g == g }

// usable drops the capabilities f has without the ones they build on:
// tracker.c takes SnapshotCookie's path only with both of its parts.
func (f Features) usable() Features {
	if !f.Has(SockFromFile | TracingCookie) {
		f &^= SnapshotCookie
	}
	return f
}

// String lists the capabilities, comma-separated, or says "none".
func (f Features) String() string {
	var names []string
	for _, n := range featureNames {
		if f.Has(n.f) {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}
