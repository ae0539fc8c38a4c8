//go:build vm

package lsmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/directexec"
)

// What hack/vm puts into the VM.
const (
	runc          = "/usr/bin/runc"
	helper        = "/usr/bin/probelet-exec"
	parser        = "/usr/sbin/apparmor_parser"
	containerdAA  = "/usr/bin/containerd-apparmor"
	busybox       = "/bin/busybox"
	runcRoot      = "/run/runc"
	containerdDef = "cri-containerd.apparmor.d" // the profile containerd loads for RuntimeDefault
	localhost     = "probelet-test-deny-secret" // testdata's, as a pod's Localhost profile
)

// TestAppArmorExecMatchesRunc: a container runs with runc under
// containerd's default AppArmor profile (loaded by containerd's own code)
// and one under a Localhost profile that denies a read. Each command runs
// once through `runc exec` and once through the direct exec helper: the
// same confinement (/proc/self/attr/current), the same denial, the same
// output and exit code, and no probe falls back to the runtime. Then the
// Localhost profile is unloaded under the running container: runc exec can
// no longer apply it and fails, and the helper hands the probe to the
// runtime, counted as lsm.
func TestAppArmorExecMatchesRunc(t *testing.T) {
	requireAppArmor(t)
	out, err := exec.Command(containerdAA, containerdDef).CombinedOutput()
	if err != nil {
		t.Fatalf("loading containerd's default profile: %v\n%s", err, out)
	}
	t.Logf("containerd's default profile, as containerd generated and loaded it:\n%s", out)
	if out, err := exec.Command(parser, "-Kr", filepath.Join("testdata", localhost)).CombinedOutput(); err != nil {
		t.Fatalf("loading %s: %v\n%s", localhost, err, out)
	}

	state := t.TempDir()
	fallback := &countingRuntime{}
	metrics := directexec.NewMetrics()
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	runner, err := directexec.New(fallback, directexec.WithHelper(helper), directexec.WithStateDir(state), directexec.WithMetrics(metrics))
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		profile string
		cmds    [][]string
	}{
		{containerdDef, [][]string{
			{"cat", "/proc/self/attr/current"},
			{"cat", "/proc/sysrq-trigger"}, // deny @{PROC}/sysrq-trigger rwklx
			{"sh", "-c", "echo 1 > /proc/sys/vm/drop_caches"},
			{"cat", "/secret"},
		}},
		{localhost, [][]string{
			{"cat", "/proc/self/attr/current"},
			{"cat", "/secret"}, // deny /secret r
			{"sh", "-c", "cat /secret; echo status $?"},
		}},
	}
	ids := map[string]string{}
	for _, tc := range cases {
		id := startContainer(t, state, tc.profile)
		ids[tc.profile] = id
		for _, cmd := range tc.cmds {
			want := runcExec(t, id, cmd)
			stdout, stderr, code, err := runner.ExecSync(context.Background(), id, cmd, 10*time.Second)
			if err != nil {
				t.Fatalf("%s: helper: %v", tc.profile, err)
			}
			got := execResult{stdout: string(stdout), stderr: string(stderr), code: code}
			t.Logf("%s: %q: runc exec %s; helper %s", tc.profile, cmd, want, got)
			if got != want {
				t.Errorf("%s: %q: the helper's answer differs from runc exec's", tc.profile, cmd)
			}
		}
	}
	if n := fallback.calls(); n != 0 {
		t.Fatalf("%d probes went to the runtime; want every one run by the helper", n)
	}
	if got := fallbacks(t, reg, "lsm"); got != 0 {
		t.Fatalf("probelet_exec_direct_fallbacks_total{reason=lsm} = %v, want 0", got)
	}

	// The Localhost profile unloaded under the running container.
	if out, err := exec.Command(parser, "-R", filepath.Join("testdata", localhost)).CombinedOutput(); err != nil {
		t.Fatalf("unloading %s: %v\n%s", localhost, err, out)
	}
	cmd := []string{"cat", "/proc/self/attr/current"}
	refused := runcExec(t, ids[localhost], cmd)
	t.Logf("%s unloaded: runc exec %s", localhost, refused)
	if refused.code == 0 {
		t.Fatalf("runc exec ran with the profile unloaded: %s", refused)
	}
	if _, _, _, err := runner.ExecSync(context.Background(), ids[localhost], cmd, 10*time.Second); err != nil {
		t.Fatalf("the probe through the fallback: %v", err)
	}
	if n := fallback.calls(); n != 1 {
		t.Fatalf("%d probes went to the runtime, want the one whose profile is gone", n)
	}
	if got := fallbacks(t, reg, "lsm"); got != 1 {
		t.Fatalf("probelet_exec_direct_fallbacks_total{reason=lsm} = %v, want 1", got)
	}
}

func requireAppArmor(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	if err != nil || !bytes.HasPrefix(b, []byte("Y")) {
		t.Fatalf("AppArmor is not enabled in this kernel (%q, %v): the VM must boot with it", b, err)
	}
	if _, err := os.Stat("/sys/kernel/security/apparmor/profiles"); err != nil {
		t.Fatalf("securityfs: %v", err)
	}
}

type execResult struct {
	stdout, stderr string
	code           int32
}

func (r execResult) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
}

// runcExec runs cmd in the container with `runc exec`, as containerd's
// shim does for ExecSync.
func runcExec(t *testing.T, id string, cmd []string) execResult {
	t.Helper()
	c := exec.Command(runc, append([]string{"--root", runcRoot, "exec", id}, cmd...)...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	var exit *exec.ExitError
	code := int32(0)
	switch {
	case errors.As(err, &exit):
		code = int32(exit.ExitCode())
	case err != nil:
		t.Fatalf("runc exec: %v", err)
	}
	return execResult{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// startContainer runs a busybox container with runc under profile, its
// bundle laid out where containerd's runc shim keeps one (directexec reads
// it there), and returns its ID.
func startContainer(t *testing.T, state, profile string) string {
	t.Helper()
	id := "aa-" + strings.ReplaceAll(profile, ".", "-")
	bundle := filepath.Join(state, "io.containerd.runtime.v2.task", "k8s.io", id)
	rootfs := filepath.Join(bundle, "rootfs")
	for _, d := range []string{"bin", "proc", "dev", "sys", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, applet := range []string{"sh", "cat", "sleep", "echo"} {
		if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", applet)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(rootfs, "secret"), []byte("not for probes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := json.MarshalIndent(ociConfig(id, profile), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"config.json": cfg, "runtime": []byte(runc)} {
		if err := os.WriteFile(filepath.Join(bundle, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	// --no-pivot: the VM's root is the initramfs, which pivot_root cannot
	// leave (runc then moves the rootfs onto / instead).
	run := exec.Command(runc, "--root", runcRoot, "run", "--detach", "--no-pivot", "--bundle", bundle,
		"--pid-file", filepath.Join(bundle, "init.pid"), id)
	// Files, not pipes: the detached container keeps runc's stdio, and
	// a pipe would keep Run waiting for it.
	errFile, err := os.Create(filepath.Join(t.TempDir(), "runc-run.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	run.Stdin, run.Stdout, run.Stderr = null, null, errFile
	if err := run.Run(); err != nil {
		msg, _ := os.ReadFile(errFile.Name())
		t.Fatalf("runc run %s: %v\n%s", id, err, msg)
	}
	t.Cleanup(func() {
		_ = exec.Command(runc, "--root", runcRoot, "delete", "--force", id).Run()
	})
	return id
}

// ociConfig is a container as containerd's CRI plugin makes one for a pod
// with the RuntimeDefault or a Localhost AppArmor profile: its default
// capabilities, the kubelet's default environment, the masked and
// read-only paths.
func ociConfig(id, profile string) *specs.Spec {
	caps := []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
		"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
		"CAP_KILL", "CAP_AUDIT_WRITE"}
	return &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			Args:            []string{"sleep", "3600"},
			Env:             []string{"PATH=/bin", "HOSTNAME=" + id},
			Cwd:             "/",
			Capabilities:    &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps},
			ApparmorProfile: profile,
			OOMScoreAdj:     ptr(1000),
		},
		Root:     &specs.Root{Path: "rootfs"},
		Hostname: id,
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		},
		Linux: &specs.Linux{
			CgroupsPath: "/probelet-vm/" + id,
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
				{Type: specs.MountNamespace}, {Type: specs.NetworkNamespace},
			},
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// countingRuntime stands in for CRI ExecSync: it counts the probes the
// helper hands over and answers them with `runc exec`.
type countingRuntime struct {
	mu sync.Mutex
	n  int
}

func (c *countingRuntime) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *countingRuntime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	out, err := exec.CommandContext(ctx, runc, append([]string{"--root", runcRoot, "exec", id}, cmd...)...).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out, exit.Stderr, int32(exit.ExitCode()), nil
	}
	return out, nil, 0, err
}

// fallbacks reads probelet_exec_direct_fallbacks_total{reason}.
func fallbacks(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "probelet_exec_direct_fallbacks_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
