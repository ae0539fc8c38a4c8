package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/internal/promutil"
)

// Values of the served label.
const (
	servedMemo     = "memo"     // a relist read answered from the memo
	servedRuntime  = "runtime"  // forwarded to containerd
	servedProbelet = "probelet" // GetContainerEvents from probelet's stream
	servedDirect   = "direct"   // ExecSync run by the direct executor (WithDirectExec)
	servedRefused  = "refused"  // not a CRI method: answered Unimplemented, never forwarded
)

// Values of the source label of invalidations.
const (
	sourceRuntime = "runtime_event"  // containerd's own container event
	sourceCall    = "call"           // a mutating call through the proxy
	sourceError   = "error"          // a read that failed
	sourceStream  = "runtime_stream" // containerd's event stream ended
)

// Values of the result label of verifications.
const (
	verifyMatch    = "match"
	verifyMismatch = "mismatch"
	verifySettled  = "settled" // differed, but the memo dropped it within the settle time
	verifyError    = "error"
	verifySkipped  = "skipped" // too many verifications in flight
)

type metrics struct {
	calls         *prometheus.CounterVec
	invalidations *prometheus.CounterVec
	verify        *prometheus.CounterVec
	mismatch      prometheus.Counter
	eventsSent    *prometheus.CounterVec
	eventsLost    prometheus.Counter
	eventStreams  prometheus.Gauge
	resyncs       prometheus.Counter
	runtimeStream prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_cri_proxy_calls_total",
			Help: "Calls to the CRI proxy, by method (other: not in this build's CRI) and who answered (memo, runtime, probelet; refused: not CRI, answered Unimplemented).",
		}, []string{"method", "served"}),
		invalidations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_cri_proxy_invalidations_total",
			Help: "Times memo entries were dropped, by what announced the change.",
		}, []string{"source"}),
		verify: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_cri_proxy_verify_total",
			Help: "Shadow-mode comparisons of a cached answer with the runtime's fresh answer, by result.",
		}, []string{"result"}),
		mismatch: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_cri_proxy_mismatch_total",
			Help: "Cached answers that differed from the runtime's fresh answer and were still held after the settle time.",
		}),
		eventsSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probelet_cri_proxy_events_total",
			Help: "Container events announced on probelet's GetContainerEvents stream, by type.",
		}, []string{"type"}),
		eventsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_cri_proxy_events_dropped_total",
			Help: "Container events a slow GetContainerEvents subscriber lost.",
		}),
		eventStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probelet_cri_proxy_event_streams",
			Help: "Open GetContainerEvents streams (the kubelet's, with Evented PLEG).",
		}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probelet_cri_proxy_resyncs_total",
			Help: "Full listings after the runtime's event stream (re)connected or node cache events were lost.",
		}),
		runtimeStream: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probelet_cri_proxy_runtime_events_connected",
			Help: "1 while the runtime's own container event stream is followed (the memo keeps answers only then).",
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	return promutil.Register(r, m.calls, m.invalidations, m.verify, m.mismatch, m.eventsSent, m.eventsLost,
		m.eventStreams, m.resyncs, m.runtimeStream)
}
