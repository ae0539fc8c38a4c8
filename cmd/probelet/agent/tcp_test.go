package agent_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/probelet/probelet/cmd/probelet/agent"
)

// TestTCPModeReachesTheProber runs the daemon in each --tcp-mode and reads
// which one the TCP prober settled on. auto falls back to dialing where
// eBPF cannot load, and the alerting gauge says so; ebpf then refuses to
// start. As root the tracker must load on this kernel: auto that dials
// there fails the test rather than pass quietly.
func TestTCPModeReachesTheProber(t *testing.T) {
	for _, mode := range []string{"dial", "auto", "ebpf"} {
		t.Run(mode, func(t *testing.T) {
			dir, err := os.MkdirTemp("/tmp", "agent")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			cfg := testConfig(dir)
			cfg.TCPMode = mode
			a, err := agent.New(cfg, agent.WithLogger(zap.NewNop()))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			select {
			case <-a.Started():
			case err := <-done:
				if mode == "ebpf" && strings.Contains(err.Error(), "--tcp-mode ebpf") {
					t.Skipf("eBPF cannot load here, and ebpf mode says so: %v", err)
				}
				t.Fatalf("Run = %v", err)
			}
			_, metrics := get(t, "http://"+a.MetricsAddr()+"/metrics")
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got := settledMode(metrics)
			want := map[string][]string{"dial": {"dial"}, "auto": {"ebpf", "dial"}, "ebpf": {"ebpf"}}[mode]
			if os.Geteuid() == 0 && mode != "dial" {
				want = []string{"ebpf"}
			}
			if !contains(want, got) {
				t.Fatalf("--tcp-mode %s settled on %q, want one of %v", mode, got, want)
			}
			fellBack := strings.Contains(metrics, "\nprobelet_tcp_shortcircuit_unavailable{")
			if fellBack != (mode == "auto" && got == "dial") {
				t.Errorf("--tcp-mode %s settled on %s; probelet_tcp_shortcircuit_unavailable present = %v", mode, got, fellBack)
			}
			t.Logf("--tcp-mode %s answers TCP probes by %s", mode, got)
		})
	}
}

func settledMode(metrics string) string {
	for line := range strings.Lines(metrics) {
		if rest, ok := strings.CutPrefix(line, `probelet_tcp_mode{mode="`); ok && strings.HasSuffix(strings.TrimSpace(line), " 1") {
			return rest[:strings.Index(rest, `"`)]
		}
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
