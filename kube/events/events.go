// Package events records the probe engine's events — Unhealthy,
// ProbeWarning, Killing, with the kubelet's reasons and messages — as
// Kubernetes Events on the pod, with the container's field path as the
// kubelet does, so `kubectl describe pod` and `kubectl events` show them.
// Aggregation, spam filtering and rate limiting are client-go's event
// correlator's, the kubelet's (rewritten here: correlate.go); the writes are made on Run's goroutine, so
// nothing of the recorder outlives Run.
package events

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/prober"
)

// Component is the events' source, as `kubectl describe` shows it ("From").
const Component = "probelet"

const (
	// The kubelet's event rate (eventRecordQPS, eventBurst): the spam
	// filter lets a node's probes through in bursts and drops floods.
	eventQPS   = 50
	eventBurst = 100
	// buffer is the engine subscription's; the engine drops (and counts)
	// events for a subscriber that falls behind rather than wait.
	buffer = 1024
	// maxTries and retryWait are client-go's broadcaster's: an Event is
	// tried 12 times, 10 s apart (the first wait jittered), while the API
	// server cannot be reached.
	maxTries  = 12
	retryWait = 10 * time.Second
	// shutdownWait bounds the flush at exit: Events the engine published
	// before it stopped are written if the API server answers in time;
	// the rest are lost, as a kubelet's are when it exits.
	shutdownWait = 2 * time.Second
)

// Recorder turns engine events into API Events. Run it once.
type Recorder struct {
	client     kube.Client
	status     prober.StatusSource
	source     corev1.EventSource
	correlator *correlator
	clock      clock.WithTicker
	retryWait  time.Duration
	log        *zap.Logger
	failures   int // consecutive failed writes, for the log
}

// Option configures a Recorder.
type Option func(*Recorder) error

// WithClock sets the clock for event times and retry waits.
func WithClock(c clock.WithTicker) Option {
	return func(r *Recorder) error {
		if c == nil {
			return errors.New("events: nil clock")
		}
		r.clock = c
		return nil
	}
}

// New returns a Recorder writing to client's core/v1 Events as source
// Component on nodeName. It starts nothing: Run does.
func New(client kube.Client, nodeName string, status prober.StatusSource, log *zap.Logger, opts ...Option) (*Recorder, error) {
	if client == nil || status == nil {
		return nil, errors.New("events: a client and the engine are required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	r := &Recorder{client: client, status: status, source: corev1.EventSource{Component: Component, Host: nodeName},
		clock: clock.RealClock{}, retryWait: retryWait, log: log}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	r.correlator = newCorrelator(r.clock, eventQPS, eventBurst)
	return r, nil
}

// Run records events until ctx ends or the engine's subscription closes,
// then writes what the engine published before for at most shutdownWait.
// Every write happens on this goroutine.
func (r *Recorder) Run(ctx context.Context) error {
	evs, cancel := r.status.SubscribeEvents(buffer)
	defer cancel()
	for {
		select {
		case <-ctx.Done():
			r.flush(ctx, evs)
			return nil
		case ev, ok := <-evs:
			if !ok {
				return nil
			}
			r.record(ctx, ev)
		}
	}
}

// flush writes the events already buffered, within shutdownWait.
func (r *Recorder) flush(ctx context.Context, evs <-chan prober.Event) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownWait)
	defer cancel()
	for fctx.Err() == nil {
		select {
		case ev, ok := <-evs:
			if !ok {
				return
			}
			r.record(fctx, ev)
		default:
			return
		}
	}
	r.log.Warn("Events not yet sent to the API server are dropped at exit", zap.Duration("waited", shutdownWait))
}

// record writes one engine event as the kubelet's recorder would: through
// the correlator (aggregation, spam filter), retried while the API server
// cannot be reached, given up when it refuses the Event.
func (r *Recorder) record(ctx context.Context, ev prober.Event) {
	if ev.PodUID == "" || ev.PodName == "" {
		return // a pod the runtime knows only by sandbox: no API object to attach to
	}
	if !util.ValidateEventType(ev.Type) {
		r.log.Error("Event of an unknown type not recorded", zap.String("type", ev.Type), zap.String("reason", ev.Reason))
		return
	}
	result, err := r.correlator.correlate(r.makeEvent(ev))
	if err != nil {
		r.log.Warn("Event correlation failed", zap.Error(err))
	}
	if result.event == nil || result.skip {
		return
	}
	for tries := 1; ; tries++ {
		if r.write(ctx, result) {
			return
		}
		if tries >= maxTries {
			r.log.Error("Event dropped after retrying", zap.String("reason", ev.Reason), zap.String("pod", ev.PodNamespace+"/"+ev.PodName), zap.Int("tries", tries))
			return
		}
		wait := r.retryWait
		if tries == 1 { // jittered, so a node's agents do not retry in step
			wait = time.Duration(rand.Float64() * float64(wait))
		}
		t := r.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// write makes one attempt; it reports whether the Event is done with
// (written, or refused for good).
func (r *Recorder) write(ctx context.Context, result correlation) bool {
	ev := result.event
	var out *corev1.Event
	var err error
	if ev.Count > 1 {
		out, err = r.client.PatchEvent(ctx, ev.Namespace, ev.Name, result.patch)
	}
	if ev.Count <= 1 || util.IsKeyNotFoundError(err) {
		cp := *ev
		cp.ResourceVersion = ""
		out, err = r.client.CreateEvent(ctx, &cp)
	}
	var status apierrors.APIStatus
	var malformed *rest.RequestConstructionError
	switch {
	case err == nil:
		r.correlator.updateState(out)
		r.failures = 0
		return true
	case ctx.Err() != nil:
		return true // stopped: the Event is given up
	case errors.As(err, &malformed):
		r.log.Error("Cannot construct an Event", zap.String("reason", ev.Reason), zap.Error(err))
		return true
	case errors.As(err, &status):
		// The API server answered and refused it: it is malformed or
		// its namespace is going away; trying again would not help.
		if !apierrors.IsAlreadyExists(err) {
			r.log.Warn("The API server refused an Event", zap.String("reason", ev.Reason),
				zap.String("pod", ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name), zap.Error(err))
		}
		return true
	}
	r.failures++
	if r.failures == 1 || r.failures%50 == 0 {
		r.log.Warn("Cannot write Events to the API server; retrying", zap.Int("failures", r.failures), zap.Error(err))
	}
	return false
}

// makeEvent is client-go's recorder's Event for ev.
func (r *Recorder) makeEvent(ev prober.Event) *corev1.Event {
	now := metav1.NewTime(r.clock.Now())
	ref := InvolvedObject(ev)
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: util.GenerateEventName(ref.Name, now.UnixNano()), Namespace: ns},
		InvolvedObject:      *ref,
		Reason:              ev.Reason,
		Message:             ev.Message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                ev.Type,
		Source:              r.source,
		ReportingController: r.source.Component,
		ReportingInstance:   r.source.Host,
	}
}

// InvolvedObject is the kubelet's reference for a container event: the pod,
// with the container's field path (a sidecar's in spec.initContainers); an
// event about the whole pod
// (ProbeSpecChanged) has none.
func InvolvedObject(ev prober.Event) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: ev.PodNamespace, Name: ev.PodName, UID: types.UID(ev.PodUID),
	}
	switch {
	case ev.ContainerName == "":
	case ev.InitContainer:
		ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", ev.ContainerName)
	default:
		ref.FieldPath = fmt.Sprintf("spec.containers{%s}", ev.ContainerName)
	}
	return ref
}
