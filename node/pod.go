package node

import "time"

// Pod is one pod sandbox of the node with its current containers, as the
// node cache (lifecycle) assembles it from the runtime's reports. Maps and
// slices are shared between snapshots and never modified in place: readers
// must not modify them either.
type Pod struct {
	// UID, Name and Namespace identify the pod in logs, events and metrics.
	// A sandbox without a UID is keyed by its sandbox ID instead.
	UID, Name, Namespace string
	// SandboxID is the runtime's pod sandbox ID (what crictl calls POD ID).
	SandboxID string
	// CreatedAt is when the sandbox was created; zero when not known yet.
	CreatedAt time.Time
	// Labels and Annotations are the sandbox's, as the runtime reports them;
	// the annotations are the pod's (probelet.io/probes among them).
	Labels, Annotations map[string]string
	// IPs are the pod's addresses; IPs[0] is the default probe host.
	IPs []string
	// HostNetwork is set when the runtime says the pod runs in the node's
	// network namespace (hostNetwork: true): its probes may name any host.
	HostNetwork bool
	// NetNSPath is the pod's network namespace (e.g. /proc/<pid>/ns/net),
	// used by the TCP short-circuit. Empty when unknown.
	NetNSPath string
	// Pid is the sandbox (pause) process on the host, 0 when unknown.
	Pid uint32
	// TerminationGracePeriodSeconds is the pod spec's grace period when a
	// source knows it (the API server); nil otherwise. The runtime only
	// carries it on containers: see the prober's spec.PodGracePeriod.
	TerminationGracePeriodSeconds *int64
	// Deleting is set once the pod is being torn down (its deletion was
	// requested, or the runtime stopped its sandbox): liveness and startup
	// then report Success and stop; readiness keeps probing.
	Deleting bool
	// API is what the API server adds; nil when probelet does not watch it
	// or has not seen the pod there.
	API *APIPod
	// Containers are the pod's current containers, the newest instance per
	// name, sorted by name.
	Containers []Container
}

// Container returns the pod's current container named name.
func (p *Pod) Container(name string) (*Container, bool) {
	for i := range p.Containers {
		if p.Containers[i].Name == name {
			return &p.Containers[i], true
		}
	}
	return nil, false
}

// Container is one container instance; a restart is a new instance with a
// new ID.
type Container struct {
	// ID is the runtime's container ID.
	ID string
	// Name is the container's name in the pod spec.
	Name string
	// Image is the image reference the container runs.
	Image string
	// CreatedAt is when the runtime created the container.
	CreatedAt time.Time
	// Labels are the container's runtime labels.
	Labels map[string]string
	// Pid is the container's init process on the host, 0 when not running.
	Pid uint32
	// State is the runtime state.
	State ContainerState
	// StartedAt is when the process started (zero if it never did or the
	// source does not say).
	StartedAt time.Time
	// FinishedAt and ExitCode are set once the container exited.
	FinishedAt time.Time
	ExitCode   int32
	// Annotations carry the kubelet's io.kubernetes.container.ports and
	// io.kubernetes.pod.terminationGracePeriod.
	Annotations map[string]string
}

// Running reports whether the container's process runs.
func (c *Container) Running() bool { return c.State == StateRunning }
