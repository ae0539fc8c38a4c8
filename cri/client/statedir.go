package client

import (
	"context"

	"github.com/probelet/probelet/internal/runtimestate"
)

// StateDir asks containerd for its state directory (its `state` setting,
// where the shims keep each container's OCI bundle): the CRI Status
// verbose info carries the CRI plugin's config, whose stateDir is
// <state>/io.containerd.grpc.v1.cri.
func (c *Client) StateDir(ctx context.Context) (string, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	return runtimestate.Ask(ctx, c.rt)
}
