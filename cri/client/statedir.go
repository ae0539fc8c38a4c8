package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criPluginID is the directory containerd's CRI plugin keeps below the
// runtime's own state directory.
const criPluginID = "io.containerd.grpc.v1.cri"

// StateDir asks containerd for its state directory (its `state` setting,
// where the shims keep each container's OCI bundle): the CRI Status
// verbose info carries the CRI plugin's config, whose stateDir is
// <state>/io.containerd.grpc.v1.cri.
func (c *Client) StateDir(ctx context.Context) (string, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return "", fmt.Errorf("runtime status: %w", err)
	}
	return stateDirOf(resp.GetInfo())
}

// stateDirOf reads the state directory out of a Status response's info.
func stateDirOf(info map[string]string) (string, error) {
	raw, ok := info["config"]
	if !ok {
		return "", errors.New("the runtime's status has no config (not containerd's CRI plugin?)")
	}
	var cfg struct {
		StateDir string `json:"stateDir"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return "", fmt.Errorf("the runtime's status config: %w", err)
	}
	dir := filepath.Clean(cfg.StateDir)
	if !filepath.IsAbs(cfg.StateDir) || filepath.Base(dir) != criPluginID {
		return "", fmt.Errorf("the runtime's CRI state directory %q is not <state>/%s", cfg.StateDir, criPluginID)
	}
	return filepath.Dir(dir), nil
}
