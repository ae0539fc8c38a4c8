package prober

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/prober/probe"
)

// Values of the result label, as the kubelet spells them.
const (
	resultSuccessful = "successful"
	resultFailed     = "failed"
	resultUnknown    = "unknown"
)

// metrics are the kubelet's /metrics/probes series plus probelet's own.
type metrics struct {
	probes   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	dropped  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober",
			Name:      "probe_total",
			Help:      "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober",
			Name:      "probe_duration_seconds",
			Help:      "Duration in seconds for a probe response.",
		}, []string{"probe_type", "container", "pod", "namespace"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "probelet",
			Name:      "subscriber_dropped_total",
			Help:      "Result changes and events dropped because a subscriber's buffer was full.",
		}, []string{"stream"}),
	}
	for _, c := range []prometheus.Collector{m.probes, m.duration, m.dropped} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// workerMetrics are one worker's series, resolved once so a probe run
// only increments.
type workerMetrics struct {
	successful, failed, unknown prometheus.Counter
	duration                    prometheus.Observer
}

func (m *metrics) forWorker(pod *Pod, container string, t probe.Type) workerMetrics {
	total := func(result string) prometheus.Counter {
		return m.probes.WithLabelValues(t.String(), result, container, pod.Name, pod.Namespace, pod.UID)
	}
	return workerMetrics{
		successful: total(resultSuccessful),
		failed:     total(resultFailed),
		unknown:    total(resultUnknown),
		duration:   m.duration.WithLabelValues(t.String(), container, pod.Name, pod.Namespace),
	}
}

// forget deletes a stopped worker's series, as the kubelet does.
func (m *metrics) forget(pod *Pod, container string, t probe.Type) {
	for _, r := range []string{resultSuccessful, resultFailed, resultUnknown} {
		m.probes.DeleteLabelValues(t.String(), r, container, pod.Name, pod.Namespace, pod.UID)
	}
	m.duration.DeleteLabelValues(t.String(), container, pod.Name, pod.Namespace)
}
