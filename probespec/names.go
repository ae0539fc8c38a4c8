package probespec

// Every name probelet writes into or reads from the cluster, and every
// reason it gives, is defined here and nowhere else: the node agent, the
// webhook and the controller agree on them by importing this file, not one
// another (TestNamesAreDefinedOnce holds the code to it).

// Pod and namespace metadata.
const (
	// AnnotationProbes is the pod annotation that declares probes per container.
	AnnotationProbes = "probelet.io/probes"
	// LabelProbes marks a namespace, or a pod, whose pods the webhook
	// converts: LabelProbes=LabelManaged; a pod labelled
	// LabelProbes=LabelUnmanaged keeps the kubelet's probes in a managed
	// namespace. The same key as the annotation, on labels.
	LabelProbes    = "probelet.io/probes"
	LabelManaged   = "managed"
	LabelUnmanaged = "unmanaged"
	// LabelAllowProbeHost is the namespace label with which a cluster admin
	// lets the namespace's pods probe any host; its value must be "true".
	// Tenants cannot label their namespace: the exception is an operator's.
	LabelAllowProbeHost = "probelet.io/allow-probe-host"
	// AnnotationProbeOrigin chooses where a pod's HTTP, gRPC and TCP-dial
	// probes connect from: OriginNode (the kubelet's way) or OriginPod
	// (the pod's own network namespace). Without it, the node's
	// --probe-origin. Read from the sandbox, so fixed at the pod's creation.
	AnnotationProbeOrigin = "probelet.io/probe-origin"
	// Prefix is what every name above begins with; the controller's
	// informers keep only these of a pod's labels and annotations.
	Prefix = "probelet.io/"
)

// The node Lease says how the node answers TCP probes, so that a node whose
// eBPF short-circuit did not load is found from the cluster:
// `kubectl get leases -n probelet-system -L probelet.io/tcp-mode`.
const (
	// LabelTCPMode is the mode in force: "ebpf" or "dial".
	LabelTCPMode = "probelet.io/tcp-mode"
	// AnnotationTCPModeReason says why the mode in force is not the one
	// asked for: the tracker's load error when --tcp-mode auto dials.
	AnnotationTCPModeReason = "probelet.io/tcp-mode-reason"
)

// The node Lease also says where the node serves its probe state to the
// probe-state API (probes.probelet.io) and which certificate it serves:
// probelet makes a new one at each start, the controller pins it from here,
// and only probelet's ServiceAccount writes these Leases.
const (
	// AnnotationStateEndpoint is HOST:PORT of the node's state listener; an
	// empty HOST means the node's InternalIP.
	AnnotationStateEndpoint = "probelet.io/state-endpoint"
	// AnnotationStateCertSHA256 is the hex SHA-256 of the DER certificate
	// the state listener serves.
	AnnotationStateCertSHA256 = "probelet.io/state-cert-sha256"
)

// The probe-state API and how the node authorises its reads.
const (
	// StateGroup is the aggregated API's group (PodProbes, v1alpha1).
	StateGroup = "probes.probelet.io"
	// StateResource is the API's resource: one PodProbes per pod.
	StateResource = "podprobes"
	// StateAudience is the audience of the tokens the controller presents
	// to nodes: a token for it is worth nothing to the API server.
	StateAudience = "probelet.io/state"
	// StateNodeSubresource names what a node asks SubjectAccessReview
	// before it answers: get on nodes/podprobes in StateGroup, the node's
	// name, as the kubelet asks about nodes/proxy.
	StateNodeSubresource = "podprobes"
)

// LeaseNamespace holds the node agents' Leases (and probelet-controller's
// leader election Lease) unless an operator names another.
const LeaseNamespace = "probelet-system"

// ConditionReady is the pod condition probelet owns (the node agent while
// it runs, probelet-controller while it is silent); pods that list it in
// spec.readinessGates are Ready only when probelet says so.
const ConditionReady = "probelet.io/ready"

// Reasons of ConditionReady when False.
const (
	// Written by the node agent.
	ReasonContainerNotRunning  = "ContainerNotRunning"
	ReasonStartupNotSucceeded  = "StartupProbeNotSucceeded"
	ReasonReadinessProbeFailed = "ReadinessProbeFailed"
	ReasonProbeSpecRejected    = "ProbeSpecRejected"
	ReasonContainerNotCreated  = "ContainerNotCreated"
	// Written by probelet-controller: the node's probelet stopped renewing
	// its Lease, or the node never had one.
	ReasonProbeletUnavailable = "ProbeletUnavailable"
	ReasonProbeletNotRunning  = "ProbeletNotRunning"
)

// Event types and reasons: the kubelet's spelling where the kubelet has
// the same Event, probelet's own otherwise.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"

	// The kubelet's.
	EventUnhealthy    = "Unhealthy"
	EventProbeWarning = "ProbeWarning"
	EventKilling      = "Killing"
	// EventFailedPreStopHook: a killed container's preStop hook failed
	// (the kubelet's events.FailedPreStopHook).
	EventFailedPreStopHook = "FailedPreStopHook"
	// EventLifecycleHTTPFallback: an HTTPS preStop hook got an HTTP answer
	// and was sent again over HTTP (the kubelet's, on the pod).
	EventLifecycleHTTPFallback = "LifecycleHTTPFallback"
	// EventWouldRestart is ActionReport's stand-in for Killing.
	EventWouldRestart = "WouldRestart"
	// EventKillDeferred: the kill guard holds a kill back.
	EventKillDeferred = "KillDeferred"
	// EventProbeSpecRejected: the annotation failed validation (the
	// condition's reason too).
	EventProbeSpecRejected = ReasonProbeSpecRejected
	// EventProbeSpecChanged: the API object's annotation changed after the
	// pod was created; the probes it was created with stay in force.
	EventProbeSpecChanged = "ProbeSpecChanged"
	// EventWebhookMissed is on a pod created unconverted in a managed
	// namespace.
	EventWebhookMissed = "ProbeletWebhookMissed"
	// EventWebhookNotAsked is on such a pod created before its namespace
	// (or the pod itself) was last labelled managed: the webhook may not
	// have been asked at all, rather than away.
	EventWebhookNotAsked = "ProbeletWebhookNotAsked"
	// EventMarkingHeldBack is on a node whose silent probelet's pods the
	// zone rules keep from being marked.
	EventMarkingHeldBack = "ProbeletMarkingHeldBack"
)
