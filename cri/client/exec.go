package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/prober/probe/execprobe"
	"github.com/probelet/probelet/quietio/deadline"
	"github.com/probelet/probelet/quietio/grpcwire"
)

var _ execprobe.Runner = (*Client)(nil)

// MaxExecReply bounds the ExecSync reply probelet reads. The kubelet keeps
// 10 KiB of an exec probe's output but takes replies up to its 16 MiB
// message limit to get there, so a container printing megabytes each
// period would have probelet hold as much per probe in flight. gRPC reads
// a reply's length first and discards a longer one unread; the run is then
// a prober error, not counted, as the kubelet drops a run whose ExecSync
// failed. --exec-mode direct reads the first 10 KiB, discards the rest as
// it comes, and keeps the exit code.
const MaxExecReply = 1 << 20

// ExecSync runs cmd in the container and waits for it, like the kubelet's
// exec probe. A non-zero exit code is not an error. When the command
// outlives timeout the error wraps execprobe.ErrTimeout: containerd kills
// it and answers DeadlineExceeded ("timeout 1s exceeded: context deadline
// exceeded"), and the call's own deadline (timeout plus the client
// timeout) reports the same code. Other errors mean the probe could not run.
func (c *Client) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	callCtx, cancel := c.callContext(ctx, timeout)
	defer cancel()
	req := &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: seconds(timeout)}
	resp, err := c.execSync(callCtx, req)
	if err != nil {
		if grpcwire.TooLarge(err) { // grpcwire or grpc-go: the same words
			return nil, nil, 0, fmt.Errorf("exec in container %s: command %q printed over %d KiB, more than probelet reads through the runtime (--exec-mode direct reads any amount): %w",
				containerID, strings.Join(cmd, " "), MaxExecReply>>10, err)
		}
		// A caller that cancelled (worker stopped) gets a plain error; a
		// caller's own deadline is still the command timing out.
		if isTimeout(err) && !errors.Is(ctx.Err(), context.Canceled) {
			return nil, nil, 0, fmt.Errorf("%w: command %q in container %s after %s", execprobe.ErrTimeout, strings.Join(cmd, " "), containerID, timeout)
		}
		return nil, nil, 0, fmt.Errorf("exec in container %s: %w", containerID, err)
	}
	return resp.GetStdout(), resp.GetStderr(), resp.GetExitCode(), nil
}

// execSync makes the call on the caller's goroutine, or through grpc-go
// for a request too large to go out at once (a command line of tens of
// KiB) or a client told to.
func (c *Client) execSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if c.wire != nil {
		resp := new(runtimeapi.ExecSyncResponse)
		err := c.wire.Call(ctx, execSyncPath, req, resp)
		if !errors.Is(err, grpcwire.ErrNoRoom) {
			return resp, err
		}
	}
	return c.rt.ExecSync(ctx, req, grpc.MaxCallRecvMsgSize(MaxExecReply))
}

// callContext bounds a call that itself waits up to wait by wait plus the
// client timeout; wait 0 means no own wait (the kubelet then sets no
// deadline for ExecSync, probelet still bounds it by the client timeout).
// The deadline is package deadline's, not a Go timer per call: an exec
// probe is a call per period, and a stopped Go timer still wakes the idle
// agent when it would have fired.
func (c *Client) callContext(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	return deadline.WithTimeout(ctx, c.timeout+wait)
}

func isTimeout(err error) bool {
	if status.Code(err) == codes.DeadlineExceeded {
		return true
	}
	// A runtime that does not map context errors to codes still says so.
	msg := status.Convert(err).Message()
	return strings.Contains(msg, "timeout") && strings.Contains(msg, "exceeded")
}

// seconds rounds up to whole seconds, the unit CRI timeouts are in; a
// sub-second timeout must not become 0, which means "none".
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
