// Package probe holds the vocabulary shared by the probe handlers and the
// engine: what a single handler run concluded and how it was answered (the
// kind of probe, probespec.Type, is the contract's).
// It mirrors the kubelet's pkg/probe error contract: a misbehaving target is
// a Failure with output and a nil error; an error means the prober broke.
package probe

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
