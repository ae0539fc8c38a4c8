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

// Stop is a kill of a container whose liveness or startup probe failed.
type Stop struct {
	// ContainerID is the container instance the kill was decided for.
	ContainerID string
	// GracePeriod is StopContainer's timeout (never less than
	// MinKillGracePeriod, like the kubelet).
	GracePeriod time.Duration
	// Reason is the kubelet's message ("Container web failed liveness
	// probe, will be restarted"), logged with the kill.
	Reason string
	// Pid and SandboxPid are the container's init and its pod's sandbox
	// process on the host, 0 when unknown. They let the kill see an exit
	// the runtime has not processed yet (see StopIfRunning).
	Pid, SandboxPid uint32
	// Issuing (may be nil) is called once the container was found running,
	// right before the stop is sent.
	Issuing func()
}

// StopIfRunning stops a container through CRI StopContainer with the grace
// period as its timeout; the kubelet then restarts it by the pod's restart
// policy. The kubelet only kills a container that runs, and the engine
// decided on its own view, which the container's exit may not have reached
// yet; so first the runtime is asked (ContainerStatus), and then, because
// containerd too reports RUNNING until it has processed the exit, the
// kernel: an init process that is exiting, a zombie, or gone while its
// sandbox process is visible has exited. A container that exited or is
// gone is not stopped, and the error wraps node.ErrNotRunning.
func (c *Client) StopIfRunning(ctx context.Context, s Stop) error {
	if err := c.checkRunning(ctx, s); err != nil {
		return err
	}
	if s.Issuing != nil {
		s.Issuing()
	}
	grace := max(s.GracePeriod, MinKillGracePeriod)
	c.log.Info("Killing container with a grace period", zap.String("containerID", s.ContainerID),
		zap.Duration("gracePeriod", grace), zap.String("reason", s.Reason))
	callCtx, cancel := c.callContext(ctx, grace)
	defer cancel()
	_, err := c.rt.StopContainer(callCtx, &runtimeapi.StopContainerRequest{
		ContainerId: s.ContainerID,
		Timeout:     seconds(grace),
	})
	switch {
	case err == nil:
		return nil
	case status.Code(err) == codes.NotFound:
		// Removed between the check and the stop: it did not run on.
		c.log.Info("Container to kill is already gone", zap.String("containerID", s.ContainerID))
		return nil
	}
	return fmt.Errorf("stop container %s: %w", s.ContainerID, err)
}

// checkRunning asks the runtime, then the kernel, whether the container
// runs. When neither can tell (a runtime error other than NotFound, pids
// not visible), the kill goes ahead: the engine saw it running, and the
// stop reports the runtime's trouble.
func (c *Client) checkRunning(ctx context.Context, s Stop) error {
	callCtx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.rt.ContainerStatus(callCtx, &runtimeapi.ContainerStatusRequest{ContainerId: s.ContainerID})
	switch {
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("%w: container %s is gone", node.ErrNotRunning, s.ContainerID)
	case err != nil:
		c.log.Warn("Cannot ask the runtime whether the container to kill runs; killing it",
			zap.String("containerID", s.ContainerID), zap.Error(err))
		return nil
	}
	if st := resp.GetStatus(); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("%w: container %s is %s (exit code %d)", node.ErrNotRunning, s.ContainerID,
			st.GetState(), st.GetExitCode())
	}
	if c.procs.exited(s.Pid, s.SandboxPid) {
		return fmt.Errorf("%w: the init process (pid %d) of container %s is exiting or has exited; the runtime has not processed the exit yet",
			node.ErrNotRunning, s.Pid, s.ContainerID)
	}
	return nil
}
