package agent_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/probelet/probelet/cmd/probelet/agent"
	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/prober/probe"
)

const ebpfFailureChildEnv = "PROBELET_TEST_TCPMODE_FAILURE_CHILD"

// failureConfig is a daemon configuration whose sockets live in a fresh
// directory anyone may write.
func failureConfig(t *testing.T, mode string) agent.Config {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "agent-tcpmode")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := agent.Default()
	cfg.NRISocket = filepath.Join(dir, "nri.sock")
	cfg.RuntimeEndpoint = "unix://" + filepath.Join(dir, "cri.sock")
	cfg.Listen = "unix://" + filepath.Join(dir, "probelet.sock")
	cfg.MetricsBindAddress = "127.0.0.1:0"
	cfg.ReconcileInterval = agent.Duration{}
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.TCPMode = mode
	return cfg
}

// runUntilStartedOrFailed runs the agent and returns Run's error, or fails
// the test if the agent started.
func runUntilStartedOrFailed(t *testing.T, a *agent.Agent) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Started():
		cancel()
		<-done
		t.Fatal("the agent started although its TCP prober could not")
	case err := <-done:
		return err
	}
	return nil
}

// TestTCPProberLoadErrorEndsStartup gives the agent what ebpf.NewTCPProber
// returns when the eBPF objects do not load (a nil *TCPProber, in the
// interface, and the error): Run must return that error, releasing what it
// built without panicking.
func TestTCPProberLoadErrorEndsStartup(t *testing.T) {
	loadErr := errors.New(`tcp mode ebpf: tracker: load eBPF objects: kfunc "bpf_rdonly_cast": not supported`)
	failing := func(context.Context, string, bool, *zap.Logger, prometheus.Registerer) (probe.TCPProber, error) {
		var p *ebpf.TCPProber
		return p, loadErr
	}
	a, err := agent.New(failureConfig(t, "ebpf"), agent.WithLogger(zap.NewNop()), agent.WithTCPProber(failing))
	if err != nil {
		t.Fatal(err)
	}
	err = runUntilStartedOrFailed(t, a)
	if !errors.Is(err, loadErr) || !strings.Contains(err.Error(), "--tcp-mode ebpf") {
		t.Fatalf("Run = %v, want the load error under --tcp-mode ebpf", err)
	}
}

// TestTCPModeEBPFFailsWhereEBPFCannotLoad runs the real daemon, with its
// default TCP prober, as nobody: the objects cannot load, so --tcp-mode
// ebpf must end Run with the load error (main then exits 1), not panic.
func TestTCPModeEBPFFailsWhereEBPFCannotLoad(t *testing.T) {
	if os.Getenv(ebpfFailureChildEnv) != "" {
		ebpfFailureChild(t)
		return
	}
	ebpftest.RequireRoot(t)
	bin := copyTestBinary(t)
	cmd := exec.Command(bin, "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), ebpfFailureChildEnv+"=1")
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) || strings.Contains(string(out), "panic:") {
		t.Fatalf("agent as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody:\n%s", out)
}

func ebpfFailureChild(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("child runs as root")
	}
	a, err := agent.New(failureConfig(t, "ebpf"), agent.WithLogger(zap.NewNop()))
	if err != nil {
		t.Fatal(err)
	}
	err = runUntilStartedOrFailed(t, a)
	if err == nil || !strings.Contains(err.Error(), "--tcp-mode ebpf") || !strings.Contains(err.Error(), "tracker") {
		t.Fatalf("Run = %v, want the tracker's load error under --tcp-mode ebpf", err)
	}
	t.Logf("Run = %v", err)
}

// copyTestBinary copies the test binary where nobody can run it.
func copyTestBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "probelet-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "agent.test")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}
