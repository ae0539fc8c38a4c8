// Package runtimestate reads containerd's state directory (its `state`
// setting, where the shims keep each container's OCI bundle) out of its
// CRI Status verbose info, for the direct exec runners of the prober and of
// the CRI proxy.
package runtimestate

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
)

// criPluginID is the directory containerd's CRI plugin keeps below the
// runtime's own state directory.
const criPluginID = "io.containerd.grpc.v1.cri"

// StateDir reads the state directory out of a verbose Status response's
// info: its config's stateDir is <state>/io.containerd.grpc.v1.cri.
func StateDir(info map[string]string) (string, error) {
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
