package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

const kubectlTimeout = 2 * time.Minute

// Kubectl runs kubectl with the admin kubeconfig and returns its stdout. A
// failure's error carries kubectl's stderr and wraps its *exec.ExitError.
func (c *Cluster) Kubectl(args ...string) ([]byte, error) {
	return c.KubectlAs(c.Kubeconfig(), args...)
}

// KubectlAs runs kubectl with another kubeconfig, e.g. one from
// ServiceAccountKubeconfig.
func (c *Cluster) KubectlAs(kubeconfig string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// KubectlPath is the kubectl binary (built by hack/cluster).
func (c *Cluster) KubectlPath() string { return c.kubectl }
