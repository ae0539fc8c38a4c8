package plugin

import (
	"fmt"

	"github.com/probelet/probelet/internal/promutil"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	connected  prometheus.Gauge
	reconnects prometheus.Counter
	failures   prometheus.Counter
	events     *prometheus.CounterVec
	panics     prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probelet_nri_connected",
			Help: "1 while the NRI plugin is registered with the runtime.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_nri_connection_losses_total",
			Help: "NRI connections that dropped (runtime restarts).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_nri_registration_failures_total",
			Help: "Failed NRI registration attempts.",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_nri_events_total",
			Help: "NRI events received, by event.",
		}, []string{"event"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_nri_handler_panics_total",
			Help: "NRI event handlers that panicked (recovered; the runtime operation went on).",
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	if err := promutil.Register(r, m.connected, m.reconnects, m.failures, m.events, m.panics); err != nil {
		return fmt.Errorf("plugin: %w", err)
	}
	return nil
}
