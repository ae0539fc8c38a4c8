package readiness

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/internal/promutil"
)

// Metrics are the condition writer's series.
type Metrics struct {
	writes  *prometheus.CounterVec
	latency prometheus.Histogram
}

// NewMetrics returns the series, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_readiness_condition_writes_total",
			Help: "pods/status writes of the probelet.io/ready condition, by result (ok, error).",
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "probelet_readiness_condition_latency_seconds",
			Help:    "Time from a readiness or startup result change to the written condition.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
	}
}

// Register registers the series with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	return promutil.Register(r, m.writes, m.latency)
}
