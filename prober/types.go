package prober

import (
	"time"

	"context"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/execprobe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/prober/spec"
)

// ContainerState is a container's runtime state as the lifecycle cache knows it.
type ContainerState int

const (
	ContainerUnknown ContainerState = iota
	ContainerCreated
	ContainerRunning
	ContainerExited
)

// String returns the CRI-like spelling ("CONTAINER_RUNNING", ...).
func (s ContainerState) String() string {
	switch s {
	case ContainerCreated:
		return "CONTAINER_CREATED"
	case ContainerRunning:
		return "CONTAINER_RUNNING"
	case ContainerExited:
		return "CONTAINER_EXITED"
	}
	return "CONTAINER_UNKNOWN"
}

// Pod is what the engine needs to know about a pod. The lifecycle cache
// builds it from NRI; the engine never sees NRI or CRI types.
type Pod struct {
	// UID, Name and Namespace identify the pod in logs, events and metrics.
	UID, Name, Namespace string
	// SandboxID is the runtime's pod sandbox ID (what crictl calls POD ID).
	SandboxID string
	// CreatedAt is when the sandbox was created.
	CreatedAt time.Time
	// Labels and Annotations are the sandbox's, as the runtime reports them.
	Labels, Annotations map[string]string
	// IPs are the pod's addresses; IPs[0] is the default probe host.
	IPs []string
	// NetNSPath is the pod's network namespace (e.g. /proc/<pid>/ns/net),
	// used by the TCP short-circuit. Empty when unknown.
	NetNSPath string
	// TerminationGracePeriodSeconds is the pod's grace period, nil if unknown.
	TerminationGracePeriodSeconds *int64
	// Deleting is set once the pod is being torn down: liveness and startup
	// then report Success and stop; readiness keeps probing.
	Deleting bool
	// Probes are the parsed specs of the probelet.io/probes annotation.
	Probes spec.PodProbes
	// SpecErrors holds, per container name, why its probes were rejected.
	SpecErrors map[string]string
	// Containers are the pod's current containers, newest instance per name.
	Containers []Container
}

// Container is one container instance.
type Container struct {
	// ID is the runtime's container ID; a restart gets a new ID.
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
	// StartedAt is when the process started (zero if it never did).
	StartedAt time.Time
	// FinishedAt and ExitCode are set once the container exited.
	FinishedAt time.Time
	ExitCode   int32
	// Env is the container environment as KEY=VALUE, used for $(VAR) in exec probes.
	Env []string
	// Annotations carry the kubelet's io.kubernetes.container.ports and
	// io.kubernetes.pod.terminationGracePeriod.
	Annotations map[string]string
}

// ExecRunner is the CRI ExecSync call exec probes go through.
type ExecRunner = execprobe.Runner

// ContainerKiller stops a container whose liveness or startup probe failed.
type ContainerKiller interface {
	KillContainer(ctx context.Context, containerID string, gracePeriod time.Duration, reason string) error
}

// Event is something a person troubleshooting wants to see (the kubelet's
// Unhealthy, ProbeWarning, Killing events).
type Event struct {
	Time          time.Time
	Type          string // "Normal" or "Warning"
	Reason        string // Unhealthy, ProbeWarning, ProbeError, Killing
	Message       string
	PodUID        string
	PodName       string
	PodNamespace  string
	ContainerName string
	ContainerID   string
	ProbeType     probe.Type
}

// ProbeRecord is one probe run, kept in a short history per probe.
type ProbeRecord struct {
	Time     time.Time
	Result   results.Result // Unknown when the run errored
	Duration time.Duration
	Output   string
	Method   probe.Method
	Error    string
}

// ProbeStatus is the live state of one worker.
type ProbeStatus struct {
	Type probe.Type
	// Result is the published result (what readiness/liveness act on).
	Result results.Result
	// Consecutive is the current run of identical results.
	Consecutive int
	// SuccessThreshold and FailureThreshold are from the defaulted spec.
	SuccessThreshold, FailureThreshold int32
	// OnHold is set after a liveness failure / startup result until a new container ID.
	OnHold        bool
	LastProbeTime time.Time
	LastOutput    string
	Method        probe.Method
	// History holds the most recent runs, oldest first.
	History []ProbeRecord
}

// Restart records a kill issued because a probe failed.
type Restart struct {
	Time        time.Time
	ContainerID string
	ProbeType   probe.Type
	GracePeriod time.Duration
	Message     string
	Err         string
}

// ContainerStatus is everything the engine knows about one container, as
// served by the socket and probectl.
type ContainerStatus struct {
	PodUID, PodName, PodNamespace string
	ContainerName, ContainerID    string
	State                         ContainerState
	StartedAt                     time.Time
	// Started is true once the startup probe succeeded (or there is none).
	Started bool
	// Ready is the published readiness (true when there is no readiness probe and the container runs).
	Ready bool
	// Spec is the container's defaulted probes.
	Spec spec.ContainerProbes
	// SpecError explains why the container's probes were rejected, if they were.
	SpecError string
	Probes    map[probe.Type]ProbeStatus
	Restarts  []Restart
}

// ResultChange is published to subscribers whenever a container's published
// result for one probe type changes.
type ResultChange struct {
	Time                          time.Time
	PodUID, PodName, PodNamespace string
	ContainerName, ContainerID    string
	Type                          probe.Type
	Result                        results.Result
	// Output is the output of the run that caused the change.
	Output string
}

// PodSink is how the lifecycle cache drives the engine. All calls return
// at once; they never probe or do I/O.
type PodSink interface {
	// UpdatePod hands the engine a pod's current state. It is idempotent:
	// workers are created for configured probes, stopped for containers
	// that no longer exist, and woken when a container ID or state changes,
	// so the first probe of a new container runs at once.
	UpdatePod(pod Pod)
	// RemovePod stops the pod's workers and drops their results.
	RemovePod(uid string)
	// SyncPods replaces the whole set of known pods (after an NRI
	// Synchronize or a reconcile): pods not listed are removed, listed ones
	// are updated, results of surviving containers are kept.
	SyncPods(pods []Pod)
}

// StatusSource is how the socket server reads probe state.
type StatusSource interface {
	// Containers lists every container that has probe state or a spec error.
	Containers() []ContainerStatus
	// Container returns one container's state by its current container ID.
	Container(id string) (ContainerStatus, bool)
	// SubscribeResults delivers result changes. The channel is buffered;
	// when a subscriber falls behind, changes for it are dropped (and
	// counted), never blocking probing. cancel closes the channel.
	SubscribeResults(buffer int) (changes <-chan ResultChange, cancel func())
	// SubscribeEvents delivers probe events the same way.
	SubscribeEvents(buffer int) (events <-chan Event, cancel func())
}
