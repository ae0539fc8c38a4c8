package ebpf

import (
	"errors"

	cebpf "github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Status is how TCP probes are answered, for the places an operator looks
// (the log, metrics, the socket's Status and probectl, the node Lease).
type Status struct {
	// Requested is --tcp-mode.
	Requested Mode
	// Mode is the mode in force: ModeEBPF or ModeDial.
	Mode Mode
	// Reason says why Mode is not what Requested asked for: the tracker's
	// load error when ModeAuto fell back to dialing; "" otherwise.
	Reason string
	// Cause is Reason's kind for alerts: "permission", "unsupported",
	// "verifier" or "error"; "" when Reason is.
	Cause string
	// Features are the tracker's optional kernel capabilities in use, when
	// it loaded.
	Features string
}

// FellBack reports whether the short-circuit was asked for and TCP probes
// dial instead.
func (s Status) FellBack() bool { return s.Requested != ModeDial && s.Mode == ModeDial }

// loadCause sorts a tracker load error into the kinds an alert tells
// apart: no privilege, a kernel without what the programs need, a verifier
// that refuses them (a kernel update to look into), anything else.
func loadCause(err error) string {
	var ve *cebpf.VerifierError
	switch {
	case errors.As(err, &ve):
		return "verifier"
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return "permission"
	case errors.Is(err, cebpf.ErrNotSupported):
		return "unsupported"
	}
	return "error"
}
