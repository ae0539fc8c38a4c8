package prober

import (
	"context"
	"strconv"
	"time"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/execprobe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// ExecRunner is the CRI ExecSync call exec probes go through.
type ExecRunner = execprobe.Runner

// Kill is one kill the engine decided: a liveness or startup failure at
// its threshold, of a container instance the engine saw running.
type Kill struct {
	// PodUID, PodName, PodNamespace and ContainerName identify the
	// container; ContainerID is the instance the decision was about.
	PodUID, PodName, PodNamespace string
	ContainerName, ContainerID    string
	// Pid and SandboxPid are the container's init and its pod's sandbox
	// process on the host, as the runtime reported them (0 when unknown).
	Pid, SandboxPid uint32
	// ProbeType is the probe that failed (Liveness or Startup).
	ProbeType probespec.Type
	// Decided is when the engine decided.
	Decided time.Time
	// GracePeriod is the kubelet's grace for the stop.
	GracePeriod time.Duration
	// Reason is the kubelet's message: "Container web failed liveness
	// probe, will be restarted".
	Reason string
	// InitContainer is set for a sidecar (an init container of the pod's
	// spec): its Events name spec.initContainers.
	InitContainer bool
	// PreStop is the container's preStop hook, resolved for the kill; nil
	// when it has none or its grace is 0 (the kubelet then runs none).
	PreStop *Hook
}

// HookKind is the action of a preStop hook.
type HookKind int8

const (
	// HookExec runs Hook.Command in the container.
	HookExec HookKind = iota + 1
	// HookHTTP sends a GET to Hook.HTTP.
	HookHTTP
	// HookSleep waits Hook.Sleep.
	HookSleep
)

// Hook is a container's preStop hook resolved against its pod, as the
// kubelet's handler runner would run it: a command (not expanded: the
// kubelet expands probes' commands, not hooks'), a GET whose host passed
// the probes' host rule, or a sleep. Err is why it cannot run (a port name
// the container does not declare, a host probelet does not dial, a
// tcpSocket action): it then fails as the kubelet's would, and the kill
// goes on.
type Hook struct {
	Kind    HookKind
	Command []string
	HTTP    httpprobe.Target
	Sleep   time.Duration
	Err     error
	// Grace is how long the kill waits for the hook: the kubelet's grace
	// before its 2 s floor. The stop gets what is left of it.
	Grace time.Duration
	// origin is the pod origin an httpGet hook connects from, as its
	// probes do; nil for the node's.
	origin *podOrigin
}

// Context is ctx for the hook's connection: from the pod's namespace
// when its probes come from there (pinned now if it is not yet); an
// error when that namespace cannot be had, which fails the hook.
func (h *Hook) Context(ctx context.Context) (context.Context, error) {
	if h.origin == nil {
		return ctx, nil
	}
	ns, err := h.origin.namespace()
	if err != nil {
		return ctx, err
	}
	return podnet.WithNamespace(ctx, ns), nil
}

// HookResult is what became of a kill's preStop hook.
type HookResult struct {
	// Took is how long the kill waited for it.
	Took time.Duration
	// Err is why it failed; nil when it succeeded or still ran when its
	// container stopped without having failed.
	Err error
	// FellBackToHTTP is set when an HTTPS hook got an HTTP answer and
	// was sent again over HTTP, successfully: the host it went to.
	FellBackToHTTP string
}

// KillOutcomeKind is what became of a kill at one stage.
type KillOutcomeKind int

const (
	// KillDeferred: the killer holds the kill back (the kill guard), for
	// Reason; sent again when the reason changes. The engine keeps
	// probing, and cancels the kill's context when the probe succeeds
	// again: a container that recovers while its kill waits is never
	// killed.
	KillDeferred KillOutcomeKind = iota + 1
	// KillIssued: the instance was found running and the stop is being
	// sent; the engine records the restart and emits Killing then.
	KillIssued
	// KillHookRan: the container's preStop hook ran (KillOutcome.Hook),
	// after KillIssued; the stop follows or has happened.
	KillHookRan
	// KillDone (final): the stop was answered, or the container was
	// removed between the check and the stop.
	KillDone
	// KillNotRunning (final): not stopped, the instance no longer runs;
	// Err says how that was seen.
	KillNotRunning
	// KillCancelled (final): the kill's context ended before it was issued.
	KillCancelled
	// KillFailed (final): the kill could not be carried out; Err says why.
	KillFailed
)

var killOutcomeNames = [...]string{KillDeferred: "Deferred", KillIssued: "Issued", KillHookRan: "HookRan", KillDone: "Done",
	KillNotRunning: "NotRunning", KillCancelled: "Cancelled", KillFailed: "Failed"}

func (k KillOutcomeKind) String() string {
	if k > 0 && int(k) < len(killOutcomeNames) {
		return killOutcomeNames[k]
	}
	return "KillOutcomeKind(" + strconv.Itoa(int(k)) + ")"
}

// Final reports whether nothing follows an outcome of this kind.
func (k KillOutcomeKind) Final() bool { return k >= KillDone }

// KillOutcome is one stage of a kill, as a killer reports it.
type KillOutcome struct {
	Kind   KillOutcomeKind
	Reason string // KillDeferred: why the kill waits
	Err    error  // KillNotRunning, KillFailed
	Hook   *HookResult
}

// ContainerKiller stops containers whose liveness or startup probe failed.
// KillContainer sends what becomes of k to report, in order — any number
// of KillDeferred, at most one KillIssued, at most one KillHookRan after
// it, then exactly one final outcome — and returns after the final one.
// The engine reads report on its own goroutine; a killer never calls into
// the engine.
type ContainerKiller interface {
	KillContainer(ctx context.Context, k Kill, report chan<- KillOutcome)
}

// FailureObserver is a killer that holds kills back and wants to know that
// a held kill's probe failed again (the kill guard: after a disruption a
// held kill goes only once its probe failed since). The engine calls
// ProbeFailed for each failed run of a probe whose kill it has handed over;
// it must not block.
type FailureObserver interface {
	ProbeFailed(containerID string, at time.Time)
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
	ProbeType     probespec.Type
	// InitContainer: the container is a sidecar, spec.initContainers'.
	InitContainer bool
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
	Type probespec.Type
	// Result is the published result (what readiness/liveness act on).
	Result results.Result
	// Unpublished is set while nothing was published for this container
	// instance: a container that ran before probelet (re)started keeps
	// its state until its first probe, like under a restarted kubelet.
	Unpublished bool
	// Consecutive is the current run of identical results.
	Consecutive int
	// SuccessThreshold and FailureThreshold are from the defaulted spec.
	SuccessThreshold, FailureThreshold int32
	// OnHold is set after a liveness failure / startup result until a new container ID.
	OnHold bool
	// KillDeferred says why the kill this probe asked for waits (the kill
	// guard), since KillDeferredSince; empty when no kill waits.
	KillDeferred      string
	KillDeferredSince time.Time
	LastProbeTime     time.Time
	LastOutput        string
	Method            probe.Method
	// Origin is where an HTTP, gRPC or TCP-dial probe connects from:
	// "node", "pod net:[INODE]", with why when it is not what was asked;
	// empty for exec probes and before the first run.
	Origin string
	// History holds the most recent runs, oldest first.
	History []ProbeRecord
}

// Restart records a kill issued because a probe failed.
type Restart struct {
	Time        time.Time
	ContainerID string
	ProbeType   probespec.Type
	GracePeriod time.Duration
	Message     string
	Err         string
}

// ContainerStatus is everything the engine knows about one container, as
// served by the socket and probectl.
type ContainerStatus struct {
	PodUID, PodName, PodNamespace string
	ContainerName, ContainerID    string
	State                         node.ContainerState
	StartedAt                     time.Time
	// Started is true once the startup probe succeeded (or there is none).
	Started bool
	// Ready is the published readiness (true when there is no readiness probe and the container runs);
	// for a plain init container, whether it exited 0.
	Ready bool
	// Spec is the container's defaulted probes.
	Spec probespec.ContainerProbes
	// SpecError explains why the container's probes were rejected, if they were.
	SpecError string
	Probes    map[probespec.Type]ProbeStatus
	Restarts  []Restart
}

// ResultChange is published to subscribers whenever a container's published
// result for one probe type changes.
type ResultChange struct {
	Time                          time.Time
	PodUID, PodName, PodNamespace string
	ContainerName, ContainerID    string
	Type                          probespec.Type
	Result                        results.Result
	// Output is the output of the run that caused the change.
	Output string
}

// StatusSource is how the socket server reads probe state.
type StatusSource interface {
	// Containers lists every container that has probe state or a spec error.
	Containers() []ContainerStatus
	// Container returns one container's state by its current container ID.
	Container(id string) (ContainerStatus, bool)
	// Pod lists the containers of the pod with uid that have probe state
	// or a spec error, ordered by container name.
	Pod(uid string) []ContainerStatus
	// PodSpec is the probes the pod with uid was created with, parsed and
	// checked once (the one parse of the probelet.io/probes annotation the
	// socket, the readiness condition and Events read); false when the
	// engine does not know the pod. The value is shared: do not modify it.
	PodSpec(uid string) (*probespec.Parsed, bool)
	// SubscribeResults delivers result changes. The channel is buffered;
	// when a subscriber falls behind, changes for it are dropped (and
	// counted), never blocking probing. cancel closes the channel.
	SubscribeResults(buffer int) (changes <-chan ResultChange, cancel func())
	// SubscribeEvents delivers probe events the same way.
	SubscribeEvents(buffer int) (events <-chan Event, cancel func())
}

// Configured lists the probe types the container has a spec or state for,
// in liveness, readiness, startup order.
func (st *ContainerStatus) Configured() []probespec.Type {
	if st == nil {
		return nil
	}
	var out []probespec.Type
	for _, t := range probespec.Types {
		_, ok := st.Probes[t]
		if ok || st.Spec.Get(t) != nil {
			out = append(out, t)
		}
	}
	return out
}
