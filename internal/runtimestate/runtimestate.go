// Package runtimestate learns containerd's state directory (its `state`
// setting, where the shims keep each container's OCI bundle) from its CRI
// Status verbose info, for the direct exec runners of the prober and of the
// CRI proxy.
package runtimestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criPluginID is the directory containerd's CRI plugin keeps below the
// runtime's own state directory.
const criPluginID = "io.containerd.grpc.v1.cri"

// ErrCRIO is StateDir's answer for CRI-O, whose status config is its own
// (a "crio" section): it keeps no containerd bundles to read.
var ErrCRIO = errors.New("the runtime is CRI-O: it keeps no containerd bundles")

// StateDir reads the state directory out of a verbose Status response's
// info: its config's stateDir is <state>/io.containerd.grpc.v1.cri.
func StateDir(info map[string]string) (string, error) {
	raw, ok := info["config"]
	if !ok {
		return "", errors.New("the runtime's status has no config (not containerd's CRI plugin?)")
	}
	var cfg struct {
		StateDir string          `json:"stateDir"`
		CRIO     json.RawMessage `json:"crio"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return "", fmt.Errorf("the runtime's status config: %w", err)
	}
	if len(cfg.CRIO) > 0 {
		return "", ErrCRIO
	}
	dir := filepath.Clean(cfg.StateDir)
	if !filepath.IsAbs(cfg.StateDir) || filepath.Base(dir) != criPluginID {
		return "", fmt.Errorf("the runtime's CRI state directory %q is not <state>/%s", cfg.StateDir, criPluginID)
	}
	return filepath.Dir(dir), nil
}

// Ask asks the runtime for its state directory through CRI Status
// (verbose), whose info carries the CRI plugin's config.
func Ask(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (string, error) {
	resp, err := rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return "", fmt.Errorf("runtime status: %w", err)
	}
	return StateDir(resp.GetInfo())
}

// askTimeout bounds asking the runtime at start: a runtime that does not
// answer leaves the default.
const askTimeout = 5 * time.Second

// Resolve is the directory direct exec reads bundles from: override when
// set (--runtime-state-dir), else what ask learns from the runtime, else
// def. A wrong directory would send every direct exec back to the runtime
// ("no such file"), so where it came from is logged.
func Resolve(ctx context.Context, override, def string, ask func(context.Context) (string, error), log *zap.Logger) string {
	if override != "" {
		return override
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	dir, err := ask(ctx)
	if errors.Is(err, ErrCRIO) {
		log.Info("Direct exec reads containerd's bundles only: on CRI-O every exec goes through the runtime (reason runtime)")
		return def
	}
	if err != nil {
		log.Warn("Cannot learn containerd's state directory yet; direct exec assumes the default and asks again when it finds no bundles there (--runtime-state-dir sets it)",
			zap.String("dir", def), zap.Error(err))
		return def
	}
	log.Info("Direct exec reads OCI bundles from containerd's state directory", zap.String("dir", dir))
	return dir
}
