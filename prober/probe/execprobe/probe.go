package execprobe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/probelet/probelet/prober/probe"
)

// maxOutput caps the reported output, stdout then stderr, like the
// kubelet's exec prober.
const maxOutput = 10 << 10

// Probe runs cmd in the container through r with the probe's timeout. Exit
// code 0 is Success and non-zero is Failure, both with stdout followed by
// stderr (10 KiB at most) as output. A Runner error wrapping ErrTimeout is a
// Failure with the kubelet's TimeoutOutput. Any other
// Runner error, a ctx that ends first, or invalid input is an error: the
// probe could not run, and the engine retries and then discards it.
func Probe(ctx context.Context, r Runner, containerID string, cmd []string, timeout time.Duration) (probe.Result, string, error) {
	if err := validate(r, containerID, cmd, timeout); err != nil {
		return probe.Unknown, "", err
	}
	stdout, stderr, code, err := r.ExecSync(ctx, containerID, cmd, timeout)
	switch {
	case ctx.Err() != nil:
		return probe.Unknown, "", fmt.Errorf("exec probe in container %s: %w", containerID, ctx.Err())
	case errors.Is(err, ErrTimeout):
		return probe.Failure, TimeoutOutput(cmd, timeout), nil
	case err != nil:
		return probe.Unknown, "", fmt.Errorf("exec probe in container %s: %w", containerID, err)
	case code != 0:
		return probe.Failure, output(stdout, stderr), nil
	}
	return probe.Success, output(stdout, stderr), nil
}

// TimeoutOutput is the output of an exec probe that outlived its timeout,
// as the kubelet (v1.37, cri-client's ErrCommandTimedOut) words it:
// `command timed out: "sleep 10" timed out after 1s`.
func TimeoutOutput(cmd []string, timeout time.Duration) string {
	return fmt.Sprintf("command timed out: %q timed out after %s", strings.Join(cmd, " "), timeout)
}

// output joins stdout and stderr, in that order, keeping at most maxOutput
// bytes.
func output(stdout, stderr []byte) string {
	var b strings.Builder
	b.Grow(min(len(stdout)+len(stderr), maxOutput))
	b.Write(stdout[:min(len(stdout), maxOutput)])
	b.Write(stderr[:min(len(stderr), maxOutput-b.Len())])
	return b.String()
}

func validate(r Runner, containerID string, cmd []string, timeout time.Duration) error {
	switch {
	case r == nil:
		return errors.New("exec probe: no runner")
	case containerID == "":
		return errors.New("exec probe: empty container ID")
	case len(cmd) == 0:
		return fmt.Errorf("exec probe in container %s: empty command", containerID)
	case timeout <= 0:
		return fmt.Errorf("exec probe in container %s: timeout %v must be positive", containerID, timeout)
	}
	return nil
}
