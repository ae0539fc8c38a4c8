package ebpf_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	cebpf "github.com/cilium/ebpf"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

const unprivilegedChildEnv = "PROBELET_TEST_UNPRIVILEGED_CHILD"

// nobody is the unprivileged identity the child test runs as.
const nobody = 65534

// TestUnprivilegedFallsBackToDialing re-runs itself as nobody: the tracker
// cannot load, ModeEBPF must say so, and ModeAuto must still answer probes
// by dialing.
func TestUnprivilegedFallsBackToDialing(t *testing.T) {
	if os.Getenv(unprivilegedChildEnv) != "" {
		unprivilegedChild(t)
		return
	}
	ebpftest.RequireRoot(t)
	bin := copyExecutable(t)
	cmd := exec.Command(bin, "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), unprivilegedChildEnv+"=1")
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("unprivileged child: %v\n%s", err, out)
	}
	t.Logf("as uid %d:\n%s", nobody, out)
}

// copyExecutable copies the test binary where nobody can run it.
func copyExecutable(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "probelet-unpriv-")
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
	bin := filepath.Join(dir, "ebpf.test")
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

func unprivilegedChild(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("child runs as root")
	}
	ctx := context.Background()
	failed, err := ebpf.NewTCPProber(ctx, ebpf.ModeEBPF)
	if err == nil || !(errors.Is(err, unix.EPERM) || errors.Is(err, cebpf.ErrNotSupported)) {
		t.Fatalf("NewTCPProber(ebpf) as nobody = %v, want EPERM or ErrNotSupported", err)
	}
	t.Logf("ModeEBPF refused: %v", err)
	// The agent keeps the result in an interface and closes it when
	// start-up fails: a nil *TCPProber there must close, not panic.
	var c io.Closer = failed
	if err := c.Close(); err != nil {
		t.Errorf("Close of the failed prober: %v", err)
	}
	core, logs := observer.New(zap.InfoLevel)
	reg := prometheus.NewRegistry()
	p, err := ebpf.NewTCPProber(ctx, ebpf.ModeAuto, ebpf.WithLogger(zap.New(core)), ebpf.WithRegisterer(reg))
	if err != nil {
		t.Fatalf("NewTCPProber(auto) as nobody: %v", err)
	}
	defer p.Close()
	if p.Mode() != ebpf.ModeDial {
		t.Fatalf("effective mode = %s, want dial", p.Mode())
	}
	// The fallback is where an operator looks, not in the log alone.
	st := p.Status()
	if !st.FellBack() || st.Requested != ebpf.ModeAuto || st.Cause != "permission" || !strings.Contains(st.Reason, "tracker") {
		t.Errorf("Status = %+v, want auto fallen back to dial for lack of permission, with the tracker's error", st)
	}
	if got := testutil.Metric(t, reg, "probelet_tcp_shortcircuit_unavailable", map[string]string{"cause": "permission"}); got != 1 {
		t.Errorf("probelet_tcp_shortcircuit_unavailable{cause=permission} = %v, want 1", got)
	}
	if n := logs.FilterMessageSnippet("unavailable").Len(); n != 1 {
		t.Errorf("%d log lines say the short-circuit is unavailable, want 1: %v", n, logs.All())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().(*net.TCPAddr).Port
	closed := closedLoopbackPort(t)
	defer ln.Close()
	dialer := tcpprobe.NewDialer()
	for _, tc := range []struct {
		port int
		want probe.Result
	}{{open, probe.Success}, {closed, probe.Failure}} {
		target := probe.TCPTarget{Host: "127.0.0.1", Port: tc.port, InPod: true, NetNSPath: "/proc/self/ns/net", Timeout: probeTimeout}
		res, out, method, err := p.ProbeTCP(ctx, target)
		dres, dout, _, _ := dialer.ProbeTCP(ctx, target)
		if err != nil || res != tc.want || method != probe.MethodDial || res != dres || out != dout {
			t.Errorf("port %d: (%s, %q, %s, %v), dial (%s, %q); want %s via dial", tc.port, res, out, method, err, dres, dout, tc.want)
		}
	}
	if n := logs.FilterMessageSnippet("unavailable").Len(); n != 1 {
		t.Errorf("probing logged the fallback again: %d lines", n)
	}
}

func closedLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := ebpftest.Listen("", ebpftest.ListenConfig{Addr: netip.MustParseAddr("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	port := l.Port
	l.Close()
	return port
}
