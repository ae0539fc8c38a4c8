package client

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/node"
)

// StopIfRunning stops a container whose liveness or startup probe failed,
// through CRI StopContainer with the grace period as its timeout (never
// less than MinKillGracePeriod, like the kubelet); the kubelet then
// restarts it by the pod's restart policy. It first asks the runtime
// whether the container still runs: the engine decided on its own view,
// and the container's exit may not have reached it yet. A container that
// exited or is gone is not stopped, and the error wraps node.ErrNotRunning.
// issuing (may be nil) is called once the runtime confirmed the container
// runs, right before the stop is sent. reason is the kubelet's message
// ("Container web failed liveness probe, will be restarted"); it is logged
// with the kubelet's "Killing container with a grace period".
func (c *Client) StopIfRunning(ctx context.Context, containerID string, gracePeriod time.Duration, reason string, issuing func()) error {
	if err := c.checkRunning(ctx, containerID); err != nil {
		return err
	}
	if issuing != nil {
		issuing()
	}
	gracePeriod = max(gracePeriod, MinKillGracePeriod)
	c.log.Info("Killing container with a grace period", zap.String("containerID", containerID),
		zap.Duration("gracePeriod", gracePeriod), zap.String("reason", reason))
	callCtx, cancel := c.callContext(ctx, gracePeriod)
	defer cancel()
	_, err := c.rt.StopContainer(callCtx, &runtimeapi.StopContainerRequest{
		ContainerId: containerID,
		Timeout:     seconds(gracePeriod),
	})
	switch {
	case err == nil:
		return nil
	case status.Code(err) == codes.NotFound:
		// Removed between the check and the stop: it did not run on.
		c.log.Info("Container to kill is already gone", zap.String("containerID", containerID))
		return nil
	}
	return fmt.Errorf("stop container %s: %w", containerID, err)
}

// checkRunning asks the runtime once whether the container runs. When the
// runtime cannot tell (an error other than NotFound), the kill goes ahead:
// the engine saw it running, and the stop reports the runtime's trouble.
func (c *Client) checkRunning(ctx context.Context, containerID string) error {
	callCtx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.rt.ContainerStatus(callCtx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID})
	switch {
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("%w: container %s is gone", node.ErrNotRunning, containerID)
	case err != nil:
		c.log.Warn("Cannot ask the runtime whether the container to kill runs; killing it",
			zap.String("containerID", containerID), zap.Error(err))
		return nil
	}
	if st := resp.GetStatus(); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("%w: container %s is %s (exit code %d)", node.ErrNotRunning, containerID,
			st.GetState(), st.GetExitCode())
	}
	return nil
}
