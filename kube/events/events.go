// Package events records the probe engine's events — Unhealthy,
// ProbeWarning, Killing, with the kubelet's reasons and messages — as
// Kubernetes Events on the pod, with the container's field path as the
// kubelet does, through client-go's event broadcaster (aggregation, spam
// filtering and rate limiting included), so `kubectl describe pod` and
// `kubectl events` show them.
package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/prober"
)

// Component is the events' source, as `kubectl describe` shows it ("From").
const Component = "probelet"

// The kubelet's event rate (eventRecordQPS, eventBurst): the spam filter
// lets a node's probes through in bursts and drops floods.
const (
	eventQPS   = 50
	eventBurst = 100
	// buffer is the engine subscription's; the engine drops (and counts)
	// events for a subscriber that falls behind rather than wait.
	buffer = 1024
)

// Recorder turns engine events into API Events. Run it once.
type Recorder struct {
	status      prober.StatusSource
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	log         *zap.Logger
}

// New returns a Recorder writing to client's core/v1 Events as source
// Component on nodeName.
func New(client kube.Client, nodeName string, status prober.StatusSource, log *zap.Logger) (*Recorder, error) {
	if client == nil || status == nil {
		return nil, errors.New("events: a client and the engine are required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{QPS: eventQPS, BurstSize: eventBurst}))
	b.StartRecordingToSink(client.Events())
	return &Recorder{
		status:      status,
		broadcaster: b,
		recorder:    b.NewRecorder(client.Scheme(), corev1.EventSource{Component: Component, Host: nodeName}),
		log:         log,
	}, nil
}

// shutdownWait bounds the flush at exit. After an API server outage the
// broadcaster's sink may be sleeping between retries (client-go tries an
// event 12 times, 10 s apart), and Shutdown waits for it: probelet's exit
// must not (found by the e2e API server outage: still running 15 s after
// SIGTERM).
const shutdownWait = 2 * time.Second

// Run records events until ctx ends or the engine's subscription closes,
// then flushes the broadcaster for at most shutdownWait.
func (r *Recorder) Run(ctx context.Context) error {
	evs, cancel := r.status.SubscribeEvents(buffer)
	defer cancel()
	defer r.shutdown()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-evs:
			if !ok {
				return nil
			}
			r.record(ev)
		}
	}
}

// shutdown stops the broadcaster, waiting for its flush at most
// shutdownWait; Events still unsent are then lost, as a kubelet's are when
// it exits.
func (r *Recorder) shutdown() {
	done := make(chan struct{})
	go func() {
		r.broadcaster.Shutdown()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(shutdownWait):
		r.log.Warn("Events not yet sent to the API server are dropped at exit", zap.Duration("waited", shutdownWait))
	}
}

func (r *Recorder) record(ev prober.Event) {
	if ev.PodUID == "" || ev.PodName == "" {
		return // a pod the runtime knows only by sandbox: no API object to attach to
	}
	r.recorder.Event(InvolvedObject(ev), ev.Type, ev.Reason, ev.Message)
}

// InvolvedObject is the kubelet's reference for a container event: the pod,
// with the container's field path; an event about the whole pod
// (ProbeSpecChanged) has none.
func InvolvedObject(ev prober.Event) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: ev.PodNamespace, Name: ev.PodName, UID: types.UID(ev.PodUID),
	}
	if ev.ContainerName != "" {
		ref.FieldPath = fmt.Sprintf("spec.containers{%s}", ev.ContainerName)
	}
	return ref
}
