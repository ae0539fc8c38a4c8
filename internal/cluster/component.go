package cluster

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/probelet/probelet/internal/testbed"
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
	deadline := time.Now().Add(componentStopTimeout)
	for testbed.Alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: %s (pid %d) still runs %s after SIGKILL", name, pid, componentStopTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// StartMissing starts the components that are not running, on their
// ports and data, and waits until the API server is ready again: up.sh
// leaves running components alone.
func (c *Cluster) StartMissing() error {
	args := []string{"--controllers", c.controllers}
	if c.featureGates != "" {
		args = append(args, "--feature-gates", c.featureGates)
	}
	_, err := c.env.run(c.env.startTimeout, "up.sh", append(args, c.dir)...)
	return err
}
