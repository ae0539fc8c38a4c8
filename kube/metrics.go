package kube

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/internal/promutil"
)

// Metrics are the API client's series.
type Metrics struct {
	errors *prometheus.CounterVec
}

// NewMetrics returns the series, not registered.
func NewMetrics() *Metrics {
	return &Metrics{errors: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "probelet_api_request_errors_total",
		Help: "API server calls that failed (unreachable, timed out, refused), by call: list or watch pods or poddisruptionbudgets, patch pods/status, create or patch events.",
	}, []string{"call"})}
}

// Register registers the series with r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	return promutil.Register(r, m.errors)
}
