// Package probe holds the vocabulary shared by the probe handlers and the
// engine: what kind of probe runs and what a single handler run concluded.
// It mirrors the kubelet's pkg/probe error contract: a misbehaving target is
// a Failure with output and a nil error; an error means the prober broke.
package probe

// Type is the kind of probe: liveness, readiness or startup.
type Type int

const (
	// Liveness restarts the container when it fails.
	Liveness Type = iota
	// Readiness gates the pod's Ready condition.
	Readiness
	// Startup gates liveness and readiness until the app has started.
	Startup
)

// Types lists every probe type in a stable order.
var Types = [...]Type{Liveness, Readiness, Startup}

// String returns the kubelet's spelling ("Liveness", "Readiness", "Startup"),
// used in events, logs and the probe_type metric label.
func (t Type) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Key returns the lower-case key used in JSON output ("liveness", ...).
func (t Type) Key() string {
	switch t {
	case Liveness:
		return "liveness"
	case Readiness:
		return "readiness"
	case Startup:
		return "startup"
	}
	return "unknown"
}

// Result is the outcome of one handler run.
type Result string

const (
	// Success means the target answered healthily.
	Success Result = "success"
	// Warning is a success with something worth telling (e.g. an unfollowed
	// redirect); the engine counts it as Success and emits a ProbeWarning.
	Warning Result = "warning"
	// Failure means the target answered unhealthily or not at all.
	Failure Result = "failure"
	// Unknown is returned together with a non-nil error.
	Unknown Result = "unknown"
)

// Method names how a probe was answered; it is shown by probectl.
type Method string

const (
	MethodHTTP Method = "http"
	MethodGRPC Method = "grpc"
	MethodExec Method = "exec"
	// MethodDial is a TCP probe answered by a real connect().
	MethodDial Method = "dial"
	// MethodEBPF is a TCP probe answered from the eBPF listener table.
	MethodEBPF Method = "ebpf"
)
