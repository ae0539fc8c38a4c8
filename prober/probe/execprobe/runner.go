// Package execprobe runs exec probes through a CRI ExecSync-shaped runner.
package execprobe

import (
	"context"
	"errors"
	"time"
)

// ErrTimeout is returned (wrapped) by a Runner when the command outlived
// its timeout; the probe maps it to Failure, like the kubelet.
var ErrTimeout = errors.New("command timed out")

// Runner runs a command in a container, shaped like CRI ExecSync.
type Runner interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}
