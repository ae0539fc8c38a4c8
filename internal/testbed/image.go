package testbed

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

const importTimeout = 5 * time.Minute

// ImportImage imports an OCI image archive (an OCI layout as a tar, such as
// `make image` writes) into the bed's runtime under the name its index.json
// gives (io.containerd.image.name), with the content of the host's platform:
// into containerd's k8s.io namespace, which CRI uses, or into CRI-O's
// storage. CRI sees it at once: pods run it with imagePullPolicy Never, or
// crictl with the name.
func (b *Bed) ImportImage(archive string) error {
	ctx, cancel := context.WithTimeout(context.Background(), importTimeout)
	defer cancel()
	if b.runtime == CRIO {
		return b.importIntoCRIO(ctx, archive)
	}
	cmd := exec.CommandContext(ctx, b.ctr, "--address", b.socket(), "--namespace", "k8s.io",
		"images", "import", "--platform", "linux/"+runtime.GOARCH, archive)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testbed: ctr images import %s: %w: %s", archive, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// importIntoCRIO copies the archive into CRI-O's storage with copyimg, as
// up.sh does for the bed's own images.
func (b *Bed) importIntoCRIO(ctx context.Context, archive string) error {
	a, err := OpenImageArchive(archive)
	if err != nil {
		return err
	}
	if a.Name == "" {
		return fmt.Errorf("testbed: %s names no image (io.containerd.image.name)", archive)
	}
	cmd := exec.CommandContext(ctx, b.copyimg, "--root", filepath.Join(b.Dir(), "storage"),
		"--runroot", filepath.Join(b.Dir(), "storage-run"), "--storage-driver", "overlay",
		"--signature-policy", filepath.Join(b.Dir(), "policy.json"),
		"--import-from", "oci-archive:"+archive, "--image-name", a.Name)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testbed: copyimg %s into CRI-O: %w: %s", archive, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Ctr runs ctr against the bed's containerd in the k8s.io namespace and
// returns its stdout; a CRI-O bed has none.
func (b *Bed) Ctr(args ...string) ([]byte, error) {
	if b.runtime != Containerd {
		return nil, fmt.Errorf("testbed: ctr on a %s bed", b.runtime)
	}
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
