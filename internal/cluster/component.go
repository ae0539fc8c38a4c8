package cluster

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/probelet/probelet/internal/testbed/harness"
)

// componentStopTimeout bounds how long a stopped component may take to exit.
const componentStopTimeout = 30 * time.Second

// StopComponent kills one of Components by its PID (SIGKILL: an outage,
// not a drain; the API server's graceful shutdown waits for its watches)
// and waits until it is gone; StartMissing brings it back.
func (c *Cluster) StopComponent(name string) error {
	if !slices.Contains(Components, name) {
		return fmt.Errorf("cluster: unknown component %q", name)
	}
	pid, ok := c.PIDs()[name]
	if !ok {
		return fmt.Errorf("cluster: %s has no PID file", name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("cluster: stop %s (pid %d): %w", name, pid, err)
	}
	if !harness.WaitGone(pid, componentStopTimeout) {
		return fmt.Errorf("cluster: %s (pid %d) still runs %s after SIGKILL", name, pid, componentStopTimeout)
	}
	return nil
}

// StartMissing starts the components that are not running, on their
// ports and data, and waits until the API server is ready again: up.sh
// leaves running components alone.
func (c *Cluster) StartMissing() error { return c.runUp() }

// runUp runs up.sh on the cluster's directory with its options; Start
// uses it for the first start.
func (c *Cluster) runUp() error {
	args := []string{"--controllers", c.controllers}
	if c.featureGates != "" {
		args = append(args, "--feature-gates", c.featureGates)
	}
	_, err := c.scripts.Run(c.scripts.StartTimeout, "up.sh", append(args, c.Dir())...)
	return err
}
