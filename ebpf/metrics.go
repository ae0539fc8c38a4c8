package ebpf

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the prober's Prometheus series.
type metrics struct {
	mismatch prometheus.Counter
	answered *prometheus.CounterVec
	fallback *prometheus.CounterVec
	drift    *prometheus.CounterVec
	mode     *prometheus.GaugeVec
	// unavailable alerts: 1 while --tcp-mode auto dials because the
	// tracker did not load, by the kind of load error.
	unavailable *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		mismatch: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_tcp_shortcircuit_mismatch_total",
			Help: "TCP probes where the eBPF short-circuit and a real dial disagreed (--tcp-verify).",
		}),
		answered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_tcp_probes_total",
			Help: "TCP probes by how they were answered: ebpf (listener table) or dial.",
		}, []string{"method"}),
		fallback: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_tcp_shortcircuit_fallback_total",
			Help: "TCP probes the short-circuit left to a dial, by reason.",
		}, []string{"reason"}),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_tcp_listener_drift_total",
			Help: "Listeners reconciliation found missing from or stale in the eBPF-fed table.",
		}, []string{"kind"}),
		mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "probelet_tcp_mode",
			Help: "The effective TCP probe mode (1 for the mode in use).",
		}, []string{"mode"}),
		unavailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "probelet_tcp_shortcircuit_unavailable",
			Help: "1 while --tcp-mode auto dials because the eBPF listener tracker did not load, by cause: permission, unsupported, verifier (the kernel refused the programs) or error.",
		}, []string{"cause"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.mismatch, m.answered, m.fallback, m.drift, m.mode, m.unavailable}
}
