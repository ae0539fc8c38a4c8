package directexec

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/internal/promutil"
)

// Metrics are the direct executor's series.
type Metrics struct {
	runs      prometheus.Counter
	fallbacks *prometheus.CounterVec
	lost      prometheus.Counter
}

// NewMetrics returns the series, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		runs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_exec_direct_total",
			Help: "Exec probes the direct executor ran itself (an answer of the command, not an error).",
		}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_exec_direct_fallbacks_total",
			Help: "Exec probes the direct executor handed to the runtime's ExecSync, by reason.",
		}, []string{"reason"}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_exec_direct_lost_total",
			Help: "Exec probes whose helper process ended (crashed, was killed) or hung without the probe's status: each an error result.",
		}),
	}
}

// Register registers the series with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	return promutil.Register(r, m.runs, m.fallbacks, m.lost)
}
