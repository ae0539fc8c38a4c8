package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cmd/probelet/agent"
	"github.com/probelet/probelet/cri/client"
	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/prober"
)

func criServer(s prober.StatusSource, v lifecycle.View, nri server.NRIStatus, tcp func() server.TCPStatus, past []prober.Event, l *zap.Logger) (agent.SocketServer, error) {
	return server.New(s, v, server.WithNRIStatus(nri), server.WithTCPStatus(tcp), server.WithLogger(l), server.WithPastEvents(past))
}

func TestAgentServesTheSocket(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := testConfig(dir)
	a, err := agent.New(cfg, agent.WithLogger(zap.NewNop()), agent.WithSocketServer(criServer))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	<-a.Started()

	c, err := client.New(cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The socket file appears at bind, a moment before the server listens
	// (a connection in between is refused), so wait for an answer.
	testutil.WaitFor(t, "Version on probelet's socket", func() bool {
		_, err := c.Version(ctx)
		return err == nil
	})
	if _, err := c.ListContainers(ctx); err != nil {
		t.Errorf("ListContainers on probelet's socket: %v", err)
	}
	if got := tcpCondition(t, cfg.Listen); got.GetStatus() || got.GetReason() != "TCPModeDial" {
		t.Errorf("--tcp-mode %s: TCPShortCircuit condition %v, want false for TCPModeDial", cfg.TCPMode, got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "probelet.sock")); !os.IsNotExist(err) {
		t.Errorf("socket left behind after shutdown: %v", err)
	}
}

// TestSocketServesWhileTheTCPProberLoads: after a restart the socket is
// back before the eBPF objects have loaded (a second or more on a busy
// node), while probelet registers with NRI, and so probes, only once the
// prober is there.
func TestSocketServesWhileTheTCPProberLoads(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "agent")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	startNRI(t, dir)
	slowLoad, loading, release := heldTCPLoad()
	cfg := testConfig(dir)
	a, err := agent.New(cfg, agent.WithLogger(zap.NewNop()), agent.WithSocketServer(criServer), agent.WithTCPProber(slowLoad))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	<-loading

	c, err := client.New(cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.WaitFor(t, "ListContainers on probelet's socket while the TCP prober loads", func() bool {
		_, err := c.ListContainers(ctx)
		return err == nil
	})
	select {
	case <-a.Started():
		t.Fatal("started before the TCP prober loaded")
	default:
	}
	if synced(t, a) {
		t.Fatal("registered with NRI (and synchronized) before the TCP prober loaded")
	}
	if got := tcpCondition(t, cfg.Listen); got.GetStatus() || got.GetReason() != "TrackerLoading" {
		t.Errorf("while the TCP prober loads: TCPShortCircuit condition %v, want false for TrackerLoading", got)
	}
	close(release)
	<-a.Started()
	testutil.WaitFor(t, "Synchronize once loaded", func() bool { return synced(t, a) })
}

// tcpCondition reads the TCPShortCircuit condition of crictl info's
// answer on the socket at endpoint.
func tcpCondition(t *testing.T, endpoint string) *runtimeapi.RuntimeCondition {
	t.Helper()
	resp, err := runtimeapi.NewRuntimeServiceClient(servertest.Dial(t, endpoint)).Status(context.Background(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.GetStatus().GetConditions() {
		if c.Type == server.ConditionTCPShortCircuit {
			return c
		}
	}
	t.Fatalf("no %s condition in %v", server.ConditionTCPShortCircuit, resp.GetStatus().GetConditions())
	return nil
}
