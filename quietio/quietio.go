// Package quietio is the switch between probelet's own I/O and the
// libraries it stands in for. probelet's own — raw non-blocking sockets,
// the plain-HTTP exchange and the HTTP/2 gRPC client on the probing
// goroutine, timer files for deadlines and the scheduler's alarm, probes
// run inline on the goroutine the alarm woke — is there because each
// library's goroutines and timers wake threads of an idle agent per probe
// (README "What a probe costs the node"). The libraries — net, net/http,
// grpc-go, Go timers — answer the same (their differential tests and
// fuzzers hold the two together); when a Go release, a kernel or a peer
// proves the quiet path wrong, --io=std runs every probe and ExecSync on
// them instead, at their cost.
//
// The switch is process-wide, as the timer file and the kept runtime
// connections it turns off are: set it before anything probes.
package quietio

import (
	"fmt"
	"sync/atomic"
)

// Modes of --io.
const (
	// Quiet is probelet's own I/O, the default.
	Quiet = "quiet"
	// Std is the standard library's and grpc-go's.
	Std = "std"
)

var std atomic.Bool

// Set switches the process to mode, Quiet or Std.
func Set(mode string) error {
	switch mode {
	case Quiet, "":
		std.Store(false)
	case Std:
		std.Store(true)
	default:
		return fmt.Errorf("io mode %q: want %s or %s", mode, Quiet, Std)
	}
	return nil
}

// Off reports whether the libraries do the I/O (--io=std).
func Off() bool { return std.Load() }

// Mode is the process's mode, Quiet or Std.
func Mode() string {
	if Off() {
		return Std
	}
	return Quiet
}
