package lifecycle

import (
	"github.com/probelet/probelet/internal/promutil"
	"github.com/prometheus/client_golang/prometheus"
)

// Drift kinds, the values of the kind label of
// probelet_lifecycle_reconcile_drift_total.
const (
	// DriftPodMissing: a ready sandbox the cache did not know.
	DriftPodMissing = "pod_missing"
	// DriftPodVanished: a cached sandbox the runtime no longer lists.
	DriftPodVanished = "pod_vanished"
	// DriftPodState: a sandbox the runtime stopped without telling us.
	DriftPodState = "pod_state"
	// DriftContainerMissing: a live container the cache did not know.
	DriftContainerMissing = "container_missing"
	// DriftContainerVanished: a cached container the runtime no longer lists.
	DriftContainerVanished = "container_vanished"
	// DriftContainerState: a container that started or exited unannounced.
	DriftContainerState = "container_state"
)

type metrics struct {
	handoff   prometheus.Histogram
	dropped   prometheus.Counter
	pods      prometheus.Gauge
	ctrs      prometheus.Gauge
	drift     *prometheus.CounterVec
	reconcile *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		handoff: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "probelet_lifecycle_event_to_worker_seconds",
			Help: "Time from receiving a runtime (NRI) event to handing the pod to the probe engine.",
			// 50µs .. ~3.3s: the interesting range is well below a millisecond.
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 17),
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_lifecycle_events_dropped_total",
			Help: "Lifecycle events not delivered because a subscriber fell behind.",
		}),
		pods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probelet_lifecycle_pods",
			Help: "Pod sandboxes in the node cache.",
		}),
		ctrs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probelet_lifecycle_containers",
			Help: "Containers in the node cache.",
		}),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_lifecycle_reconcile_drift_total",
			Help: "Differences between the cache and a CRI listing that a reconcile fixed, by kind.",
		}, []string{"kind"}),
		reconcile: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_lifecycle_reconcile_total",
			Help: "CRI reconcile runs, by result (ok, error).",
		}, []string{"result"}),
	}
}

// register adds the collectors to r.
func (m *metrics) register(r prometheus.Registerer) error {
	return promutil.Register(r, m.handoff, m.dropped, m.pods, m.ctrs, m.drift, m.reconcile)
}
