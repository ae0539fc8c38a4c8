package client

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// KillContainer stops a container whose liveness or startup probe failed,
// through CRI StopContainer with the grace period as its timeout (never
// less than MinKillGracePeriod, like the kubelet); the kubelet then
// restarts it by the pod's restart policy. reason is the kubelet's message
// ("Container web failed liveness probe, will be restarted"); it is logged
// with the kubelet's "Killing container with a grace period". A container
// that is already gone is not an error.
func (c *Client) KillContainer(ctx context.Context, containerID string, gracePeriod time.Duration, reason string) error {
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
		c.log.Info("Container to kill is already gone", zap.String("containerID", containerID))
		return nil
	}
	return fmt.Errorf("stop container %s: %w", containerID, err)
}
