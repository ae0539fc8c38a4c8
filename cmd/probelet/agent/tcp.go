package agent

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/prober/probe"
)

// defaultTCPProber answers TCP probes from the eBPF listener table (auto
// falls back to dialing when it cannot load, ebpf refuses to start, dial
// always dials), verifying eBPF answers with a dial when asked to.
func defaultTCPProber(ctx context.Context, mode string, verify bool, log *zap.Logger, reg prometheus.Registerer) (probe.TCPProber, error) {
	m, err := ebpf.ParseMode(mode)
	if err != nil {
		return nil, err
	}
	p, err := ebpf.NewTCPProber(ctx, m, ebpf.WithVerify(verify), ebpf.WithLogger(log), ebpf.WithRegisterer(reg))
	if err != nil {
		// A typed nil *TCPProber in the interface would not compare nil.
		return nil, err
	}
	return p, nil
}
