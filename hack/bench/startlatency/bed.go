package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// bed is a containerd test bed started by hack/testbed/up.sh.
type bed struct {
	root    string // the repository
	dir     string
	nri     string // NRI socket path
	cri     string // unix:// endpoint of containerd's CRI
	cgroup  string // pods' cgroup parent
	busybox string // image reference
}

// startBed starts a bed in a fresh short directory under /tmp.
func startBed(ctx context.Context, root string) (*bed, error) {
	dir, err := os.MkdirTemp("/tmp", "pbb-")
	if err != nil {
		return nil, err
	}
	b := &bed{root: root, dir: dir}
	fmt.Fprintf(os.Stderr, "starting a containerd test bed in %s (a first run builds containerd: minutes)\n", dir)
	out, err := b.script(ctx, "up.sh")
	if err != nil {
		_ = b.stop()
		return nil, err
	}
	env := exports(out)
	b.nri, b.cri = env["PROBELET_NRI_SOCKET"], env["CONTAINER_RUNTIME_ENDPOINT"]
	b.cgroup, b.busybox = env["PROBELET_TESTBED_CGROUP_PARENT"], env["PROBELET_BUSYBOX_IMAGE"]
	if b.nri == "" || b.cri == "" || b.cgroup == "" || b.busybox == "" {
		_ = b.stop()
		return nil, fmt.Errorf("up.sh printed an incomplete environment:\n%s", out)
	}
	return b, nil
}

// stop tears the bed down.
func (b *bed) stop() error {
	_, err := b.script(context.Background(), "down.sh")
	return err
}

func (b *bed) script(ctx context.Context, name string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(b.root, "hack", "testbed", name), b.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("hack/testbed/%s %s: %w\n%s", name, b.dir, err, stderr.String())
	}
	return out, nil
}

// exports reads `export K=V` lines; values with shell quoting are skipped
// (the ones used here are plain paths and names).
func exports(out []byte) map[string]string {
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		kv, ok := strings.CutPrefix(sc.Text(), "export ")
		if !ok {
			continue
		}
		if k, v, ok := strings.Cut(kv, "="); ok && !strings.ContainsAny(v, `\'"`) {
			env[k] = v
		}
	}
	return env
}
