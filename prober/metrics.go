package prober

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/internal/promutil"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

// Values of the result label, as the kubelet spells them.
const (
	resultSuccessful = "successful"
	resultFailed     = "failed"
)

// discarded counts one errored run of probe type t.
func (m *metrics) discarded(t probespec.Type) {
	m.errored.WithLabelValues(t.String()).Inc()
}

// metrics are the kubelet's /metrics/probes series plus probelet's own.
type metrics struct {
	probes   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	dropped  *prometheus.CounterVec
	// errored counts discarded runs. The kubelet throws them away before
	// its metrics, so they stay out of prober_probe_total.
	errored *prometheus.CounterVec
	runners prometheus.GaugeFunc
}

// newMetrics registers the engine's series; runners reads the pool's size.
func newMetrics(reg prometheus.Registerer, runners func() int) (*metrics, error) {
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
		errored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "probelet",
			Name:      "probe_errors_total",
			Help:      "Probe runs discarded because the prober itself failed (after 3 tries); the kubelet does not count these in prober_probe_total.",
		}, []string{"probe_type"}),
		runners: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "probelet",
			Name:      "probe_runners",
			Help:      "Goroutines that run probes: started on demand up to the engine's concurrency and kept between bursts (the most probes that ran at once, not a leak), plus one per probe waiting on its target past 20 ms, which no longer holds a runner.",
		}, func() float64 { return float64(runners()) }),
	}
	if err := promutil.Register(reg, m.probes, m.duration, m.dropped, m.errored, m.runners); err != nil {
		return nil, err
	}
	return m, nil
}

// workerMetrics are one worker's series. Like the kubelet's, a series
// exists once it has a value; each is resolved on first use and then kept,
// so a probe run only increments. Guarded by Manager.mu.
type workerMetrics struct {
	m *metrics
	// t, container, pod, namespace, uid are the label values.
	t                              probespec.Type
	container, pod, namespace, uid string
	successful, failed             prometheus.Counter
	duration                       prometheus.Observer
}

func (m *metrics) forWorker(pod *node.Pod, container string, t probespec.Type) workerMetrics {
	return workerMetrics{m: m, t: t, container: container, pod: pod.Name, namespace: pod.Namespace, uid: pod.UID}
}

// count adds one run with the given result label.
func (wm *workerMetrics) count(result string) {
	c := &wm.successful
	if result == resultFailed {
		c = &wm.failed
	}
	if *c == nil {
		*c = wm.m.probes.WithLabelValues(wm.t.String(), result, wm.container, wm.pod, wm.namespace, wm.uid)
	}
	(*c).Inc()
}

// observe records a run's duration.
func (wm *workerMetrics) observe(d time.Duration) {
	if wm.duration == nil {
		wm.duration = wm.m.duration.WithLabelValues(wm.t.String(), wm.container, wm.pod, wm.namespace)
	}
	wm.duration.Observe(d.Seconds())
}

// forget deletes the worker's series, as the kubelet does when a worker stops.
func (wm *workerMetrics) forget() {
	for _, r := range []string{resultSuccessful, resultFailed} {
		wm.m.probes.DeleteLabelValues(wm.t.String(), r, wm.container, wm.pod, wm.namespace, wm.uid)
	}
	wm.m.duration.DeleteLabelValues(wm.t.String(), wm.container, wm.pod, wm.namespace)
}
