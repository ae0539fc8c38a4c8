package client

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version returns the runtime's name and versions.
func (c *Client) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return nil, fmt.Errorf("runtime version: %w", err)
	}
	return resp, nil
}

// ListPodSandbox lists every pod sandbox.
func (c *Client) ListPodSandbox(ctx context.Context) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	return resp.GetItems(), nil
}

// ListContainers lists every container, exited ones included.
func (c *Client) ListContainers(ctx context.Context) ([]*runtimeapi.Container, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return resp.GetContainers(), nil
}

// PodSandboxStatus returns one sandbox's status with the runtime's verbose info.
func (c *Client) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatusResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		return nil, fmt.Errorf("pod sandbox %s status: %w", id, err)
	}
	return resp, nil
}

// ContainerStatus returns one container's status with the runtime's verbose info.
func (c *Client) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatusResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return nil, fmt.Errorf("container %s status: %w", id, err)
	}
	return resp, nil
}
