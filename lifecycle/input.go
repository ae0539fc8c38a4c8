package lifecycle

import (
	"fmt"
	"time"

	"github.com/probelet/probelet/node"
)

// Sandbox is what a runtime source (an NRI event, Synchronize or a CRI
// listing) says about one pod sandbox. Maps and slices handed in are kept
// as they are and never modified, so callers must not modify them either.
type Sandbox struct {
	// ID is the runtime's sandbox ID.
	ID string
	// UID, Name and Namespace come from the pod's CRI metadata. A sandbox
	// without a UID is keyed by its ID instead.
	UID, Name, Namespace string
	// CreatedAt is zero when the source does not know it (NRI does not
	// carry it); the cache then keeps what it learned before.
	CreatedAt time.Time
	// Labels and Annotations are the sandbox's.
	Labels, Annotations map[string]string
	// IPs are the pod's addresses, primary first.
	IPs []string
	// NetNSPath is the pod's network namespace path, empty if unknown.
	NetNSPath string
	// Network is whether the sandbox has a network namespace of its own;
	// NetworkUnknown when the source does not say.
	Network Network
	// Pid is the sandbox (pause) process, 0 if unknown.
	Pid uint32
}

// Network is whether a sandbox has a network namespace of its own. It is
// fixed at the sandbox's creation: the first source that knows it wins.
type Network int8

// Networks of a sandbox.
const (
	// NetworkUnknown: the source does not say.
	NetworkUnknown Network = iota
	// NetworkPod: the sandbox has its own network namespace.
	NetworkPod
	// NetworkHost: the sandbox runs in the node's (hostNetwork: true).
	NetworkHost
)

// Container is what a runtime source says about one container: the
// engine's view of it plus the sandbox it belongs to.
type Container struct {
	// SandboxID is the ID of the pod sandbox the container runs in.
	SandboxID string
	node.Container
}

// key returns the identity the engine knows the pod by.
func (s *Sandbox) key() string {
	if s.UID != "" {
		return s.UID
	}
	return s.ID
}

// UnixNanos converts a runtime's Unix-nanosecond timestamp (NRI and CRI
// both use them); 0 or less means unknown and gives the zero time.
func UnixNanos(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// ProcNetNS is the network namespace of a sandbox's pause process, for a
// source whose spec names none; "" (unknown) when pid is 0.
func ProcNetNS(pid uint32) string {
	if pid == 0 {
		return ""
	}
	return fmt.Sprintf("/proc/%d/ns/net", pid)
}
