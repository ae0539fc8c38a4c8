package testbed

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

const importTimeout = 5 * time.Minute

// ImportImage imports an OCI image archive (an OCI layout as a tar, such as
// `make image` writes) into the bed's containerd, in the k8s.io namespace
// CRI uses, under the name its index.json gives (io.containerd.image.name),
// with the content of the host's platform. CRI sees it at once: pods run it
// with imagePullPolicy Never, or crictl with the name.
func (b *Bed) ImportImage(archive string) error {
	ctx, cancel := context.WithTimeout(context.Background(), importTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.ctr, "--address", b.socket(), "--namespace", "k8s.io",
		"images", "import", "--platform", "linux/"+runtime.GOARCH, archive)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testbed: ctr images import %s: %w: %s", archive, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Ctr runs ctr against the bed's containerd in the k8s.io namespace and
// returns its stdout.
func (b *Bed) Ctr(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), crictlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.ctr, append([]string{"--address", b.socket(), "--namespace", "k8s.io"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
