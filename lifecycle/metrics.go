package lifecycle

import (
	"errors"

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

// register adds the collectors to r; collectors already registered (a
// second cache in the same process) are reused.
func (m *metrics) register(r prometheus.Registerer) error {
	var err error
	m.handoff = registerOrReuse(r, m.handoff, &err)
	m.dropped = registerOrReuse(r, m.dropped, &err)
	m.pods = registerOrReuse(r, m.pods, &err)
	m.ctrs = registerOrReuse(r, m.ctrs, &err)
	m.drift = registerOrReuse(r, m.drift, &err)
	m.reconcile = registerOrReuse(r, m.reconcile, &err)
	return err
}

func registerOrReuse[C prometheus.Collector](r prometheus.Registerer, c C, errp *error) C {
	if err := r.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		if *errp == nil {
			*errp = err
		}
	}
	return c
}
