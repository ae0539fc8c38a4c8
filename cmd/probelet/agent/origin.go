package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/podnet"
)

// originCollectors say what the pod origin holds: the pods' network
// namespaces pinned now, each an open file released with its pod.
func originCollectors(pins *podnet.Pins) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "probelet_probe_origin_namespaces",
			Help: "Pods' network namespaces pinned for probes from them (--probe-origin pod, probelet.io/probe-origin).",
		}, func() float64 { return float64(pins.Pinned()) }),
	}
}
