package killguard

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/internal/promutil"
)

// Metrics are the guard's series.
type Metrics struct {
	state    *prometheus.GaugeVec
	deferred prometheus.Counter
	queue    prometheus.Gauge
}

// NewMetrics returns the series, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "probelet_kill_guard_state",
			Help: "The node's disruption state as the kill guard sees it (1 for the current one).",
		}, []string{"state"}),
		deferred: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_kills_deferred_total",
			Help: "Liveness and startup kills the kill guard held back (each counted once).",
		}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probelet_kill_queue_length",
			Help: "Kills waiting in the kill guard's queue.",
		}),
	}
}

// Register registers the series with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	return promutil.Register(r, m.state, m.deferred, m.queue)
}

func (m *Metrics) setState(st State) {
	for _, s := range []State{Normal, PartialDisruption, FullDisruption} {
		v := 0.0
		if s == st {
			v = 1
		}
		m.state.WithLabelValues(s.String()).Set(v)
	}
}
