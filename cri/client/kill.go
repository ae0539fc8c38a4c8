package client

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopContainer is CRI StopContainer with grace as its timeout (whole
// seconds, rounded up); the call itself may take the grace plus the
// client's timeout.
func (c *Client) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	callCtx, cancel := c.callContext(ctx, grace)
	defer cancel()
	if _, err := c.rt.StopContainer(callCtx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: seconds(grace)}); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}
