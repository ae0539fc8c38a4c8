//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/checkout"
	"github.com/probelet/probelet/internal/testbed"
)

// Markers the hack/testbed and hack/cluster scripts look for: a directory
// with one of them (and an owner file naming a live process) is theirs.
const (
	bedMarker     = ".probelet-testbed"
	kubeletMarker = ".probelet-kubelet"
)

// env is the node: a containerd test bed, a standalone kubelet on it, the
// binaries, and a CRI connection to watch the pods.
type env struct {
	c        config
	root     string // the repository
	work     string // built binaries
	probelet string // probelet binary
	appDir   string // the app binary's directory, mounted into the pods
	bed      string // test bed directory
	kubelet  *kubelet
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
	perf     bool
}

func startEnv(ctx context.Context, c config) (_ *env, err error) {
	e := &env{c: c, perf: havePerf()}
	defer func() {
		if err != nil {
			_ = e.close(false)
		}
	}()
	if !e.perf && c.sysWindow > 0 {
		fmt.Fprintln(os.Stderr, "node bench: perf cannot count syscall tracepoints here; syscalls are not reported")
	}
	if e.root, err = checkout.Root(); err != nil {
		return nil, err
	}
	if e.work, err = os.MkdirTemp("", "nodebench-"); err != nil {
		return nil, err
	}
	if e.probelet = c.probelet; e.probelet == "" {
		e.logf("building probelet as deploy/Dockerfile does (static, stripped)")
		if e.probelet, err = e.goBuild(ctx, "probelet", "./cmd/probelet"); err != nil {
			return nil, err
		}
	}
	e.logf("building the pods' app (static)")
	app, err := e.goBuild(ctx, appName, "./hack/bench/node")
	if err != nil {
		return nil, err
	}
	if err := e.startBed(ctx); err != nil {
		return nil, err
	}
	// The app goes into the bed's directory: the pods mount it from there
	// and the bed's teardown removes it.
	e.appDir = filepath.Join(e.bed, "nodebench")
	if err := os.MkdirAll(e.appDir, 0o755); err != nil {
		return nil, err
	}
	if err := copyFile(app, filepath.Join(e.appDir, appName)); err != nil {
		return nil, err
	}
	if e.conn, err = grpc.NewClient(e.criEndpoint(), grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
		return nil, err
	}
	e.rt = runtimeapi.NewRuntimeServiceClient(e.conn)
	e.logf("starting a standalone kubelet")
	if e.kubelet, err = startKubelet(ctx, e.root, e.bed); err != nil {
		return nil, err
	}
	return e, nil
}

// close tears everything down in reverse; keep leaves the bed and the
// kubelet running for inspection.
func (e *env) close(keep bool) error {
	if e.conn != nil {
		e.conn.Close()
	}
	if e.work != "" {
		os.RemoveAll(e.work)
	}
	if keep && e.bed != "" {
		kdir := ""
		if e.kubelet != nil {
			kdir = e.kubelet.dir
		}
		fmt.Fprintf(os.Stderr, "kept the bed in %s and the kubelet in %s; remove them with hack/cluster/kubelet.sh down %s; hack/testbed/down.sh %s\n",
			e.bed, kdir, kdir, e.bed)
		return nil
	}
	var errs []error
	if e.kubelet != nil {
		errs = append(errs, e.kubelet.down())
	}
	if e.bed != "" {
		_, err := script(context.Background(), e.root, "testbed/down.sh", e.bed)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (e *env) criEndpoint() string { return "unix://" + filepath.Join(e.bed, e.c.runtime+".sock") }
func (e *env) nriSocket() string   { return filepath.Join(e.bed, "nri.sock") }

// startBed starts a containerd test bed in a fresh short directory, owned
// by this process (hack/testbed/gc.sh removes it should we die).
func (e *env) startBed(ctx context.Context) error {
	dir, err := os.MkdirTemp("/tmp", "pbn-")
	if err != nil {
		return err
	}
	e.bed = dir
	if err := testbed.MarkOwned(dir, bedMarker); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "node bench: starting a %s test bed in %s (a first run builds it: minutes)\n", e.c.runtime, dir)
	_, err = script(ctx, e.root, "testbed/up.sh", dir)
	return err
}

// goBuild builds pkg into the work directory as deploy/Dockerfile builds
// the image's binaries: static (CGO_ENABLED=0: no libc mapped, no cgo
// threads), with its build tags, without symbol tables or a build ID. probelet's RSS and CPU
// are then those of the binary that ships (a default cgo build was 2 MiB
// larger in RSS at 100 pods: libc and cgo's start-up).
func (e *env) goBuild(ctx context.Context, name, pkg string) (string, error) {
	out := filepath.Join(e.work, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-tags", "grpcnotrace", "-ldflags", "-s -w -buildid=", "-o", out, pkg)
	cmd.Dir = e.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
}

// script runs hack/NAME and returns its stdout; the error carries stderr.
func script(ctx context.Context, root, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", name), args...)
	// up.sh reads the runtime of a new bed from PROBELET_TESTBED_RUNTIME
	// (main sets it from -runtime); a bed keeps its own afterwards.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// The daemons log to files, but a stray inherited pipe must not hang us.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("hack/%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// readEnvFile parses the KEY=VALUE lines the scripts write.
func readEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return kv, nil
}
