package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +genclient:readonly
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodProbes is the probe state of one pod, as its node's probelet holds
// it at the time of the request. Its metadata is the pod's (name,
// namespace, uid, labels, creation time).
type PodProbes struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// NodeName is the node the pod is bound to.
	NodeName string `json:"nodeName,omitempty"`
	// Source says whether the node's probelet answered, and if not, why;
	// Containers is empty then.
	Source Source `json:"source"`
	// Containers are the pod's containers probelet knows, by name.
	Containers []ContainerProbes `json:"containers,omitempty"`
}

// Source is where a PodProbes came from.
type Source struct {
	// Answered is true when the node's probelet answered.
	Answered bool `json:"answered"`
	// Reason is why it did not, in one word: NotScheduled,
	// ProbeletUnavailable (its node Lease expired or is missing),
	// NotServing (its Lease names no state endpoint), Timeout, Refused
	// (the node turned the controller away) or Failed.
	Reason string `json:"reason,omitempty"`
	// Message says it in a sentence.
	Message string `json:"message,omitempty"`
	// ObservedTime is when the node was asked.
	ObservedTime metav1.Time `json:"observedTime"`
}

// ContainerProbes is one container and its probes.
type ContainerProbes struct {
	Name        string `json:"name"`
	ContainerID string `json:"containerID,omitempty"`
	Image       string `json:"image,omitempty"`
	// State is Created, Running, Exited or Unknown.
	State      string       `json:"state"`
	CreatedAt  *metav1.Time `json:"createdAt,omitempty"`
	StartedAt  *metav1.Time `json:"startedAt,omitempty"`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	ExitCode   int32        `json:"exitCode,omitempty"`
	// Started is true once the startup probe succeeded (or there is none).
	Started bool `json:"started"`
	// Ready is the readiness probelet publishes.
	Ready bool `json:"ready"`
	// SpecError says why the container's probes were rejected.
	SpecError string `json:"specError,omitempty"`
	// Probes are the container's probes: liveness, readiness, startup.
	Probes []Probe `json:"probes,omitempty"`
	// Restarts are the kills probelet issued for its probes, oldest first.
	Restarts []Restart `json:"restarts,omitempty"`
	// Explanations are `probectl why`'s answers, most important first.
	Explanations []Explanation `json:"explanations,omitempty"`
}

// Probe is one probe and its state.
type Probe struct {
	// Type is Liveness, Readiness or Startup.
	Type string    `json:"type"`
	Spec ProbeSpec `json:"spec"`
	// Result is the published result: Success, Failure or Unknown.
	Result string `json:"result"`
	// Consecutive is the current run of identical results, to compare
	// with the spec's successThreshold or failureThreshold.
	Consecutive int32 `json:"consecutive"`
	// OnHold is set after a liveness failure or a startup result, until
	// the container restarts.
	OnHold        bool         `json:"onHold,omitempty"`
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
	// LastOutput is the last run's output, cut to a bound.
	LastOutput string `json:"lastOutput,omitempty"`
	// Method is how the last run was answered: HTTP, GRPC, Exec, Dial or
	// EBPF (a TCP probe answered from the listener table).
	Method string `json:"method,omitempty"`
	// Origin is where an HTTP, gRPC or TCP-dial probe connects from:
	// "node" (the kubelet's way) or "pod net:[INODE]" (the pod's own
	// network namespace), with why when it is not what was asked.
	Origin string `json:"origin,omitempty"`
	// History holds the most recent runs, oldest first.
	History []ProbeRun `json:"history,omitempty"`
	// KillDeferred says why the kill this probe asked for waits (the kill
	// guard), since KillDeferredSince.
	KillDeferred      string       `json:"killDeferred,omitempty"`
	KillDeferredSince *metav1.Time `json:"killDeferredSince,omitempty"`
}

// ProbeSpec is the probe as run, with the defaults filled in.
type ProbeSpec struct {
	// Handler summarises it as kubectl describe does, e.g.
	// "http-get http://:8080/ready".
	Handler             string `json:"handler"`
	InitialDelaySeconds int32  `json:"initialDelaySeconds"`
	TimeoutSeconds      int32  `json:"timeoutSeconds"`
	PeriodSeconds       int32  `json:"periodSeconds"`
	SuccessThreshold    int32  `json:"successThreshold"`
	FailureThreshold    int32  `json:"failureThreshold"`
	// TerminationGracePeriodSeconds is the probe-level override, if set.
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ProbeRun is one run of a probe.
type ProbeRun struct {
	Time     metav1.Time     `json:"time"`
	Result   string          `json:"result"`
	Duration metav1.Duration `json:"duration"`
	Output   string          `json:"output,omitempty"`
	Method   string          `json:"method,omitempty"`
	// Error is set when the prober itself failed (the run was not counted).
	Error string `json:"error,omitempty"`
}

// Restart is a kill probelet issued because a probe failed.
type Restart struct {
	Time        metav1.Time     `json:"time"`
	ContainerID string          `json:"containerID,omitempty"`
	ProbeType   string          `json:"probeType"`
	GracePeriod metav1.Duration `json:"gracePeriod"`
	Message     string          `json:"message,omitempty"`
	// Error is set when the kill failed.
	Error string `json:"error,omitempty"`
}

// Explanation is one answer of `probectl why` with its evidence.
type Explanation struct {
	// Subject is what is explained: "not started", "not ready",
	// "restarted", "spec rejected", "not running" or "healthy".
	Subject string `json:"subject"`
	// ProbeType is the probe responsible, if any.
	ProbeType string `json:"probeType,omitempty"`
	Text      string `json:"text"`
	// Consecutive and Threshold are the run that decides (or will).
	Consecutive int32      `json:"consecutive,omitempty"`
	Threshold   int32      `json:"threshold,omitempty"`
	LastRuns    []ProbeRun `json:"lastRuns,omitempty"`
	Restarts    []Restart  `json:"restarts,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodProbesList is a list of PodProbes.
type PodProbesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodProbes `json:"items"`
}
