package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/podnet"
)

// originCollectors say what the pod origin holds: the pods' namespaces
// pinned now (each an open file, released with its pod), and the threads
// that could not leave a pod's namespace (each ended with its goroutine).
func originCollectors(pins *podnet.Pins) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "probelet_probe_origin_namespaces",
			Help: "Pods' network namespaces pinned for probes from them (--probe-origin pod, probelet.io/probe-origin).",
		}, func() float64 { n, _ := pins.Stats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "probelet_probe_origin_threads_lost_total",
			Help: "Threads that could not return from a pod's network namespace after making a socket there, and exited.",
		}, func() float64 { _, lost := pins.Stats(); return float64(lost) }),
	}
}
