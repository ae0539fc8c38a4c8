package agent

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/probelet/probelet/prober/probe"
)

// defaultTCPProber keeps TCP probes on the engine's kubelet-style dialer.
// The eBPF listener table is not wired in yet: auto falls back to dialing
// and says so, ebpf is refused rather than silently dialing.
func defaultTCPProber(_ context.Context, mode string, _ bool, log *zap.Logger, _ prometheus.Registerer) (probe.TCPProber, error) {
	switch mode {
	case "ebpf":
		return nil, errors.New("the eBPF TCP prober is not available in this build")
	case "auto":
		log.Info("eBPF TCP prober not available in this build; TCP probes dial")
	}
	return nil, nil
}
