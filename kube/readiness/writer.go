package readiness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
)

// Retry bounds for a failed write: fast enough that the condition is right
// within a few seconds of the API server's return, slow enough not to
// hammer it while it is away.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
	// changeBuffer is the engine subscription's buffer; a burst beyond it
	// is caught up by the informer's resync and the next change.
	changeBuffer = 4096
)

// Writer keeps the condition of the node's gated pods. Run it once.
type Writer struct {
	client   kube.Client
	informer cache.SharedIndexInformer
	lister   listersv1.PodLister
	status   prober.StatusSource
	clock    clock.WithTicker
	log      *zap.Logger
	m        *Metrics
	queue    workqueue.TypedRateLimitingInterface[types.NamespacedName]
	// started is when this agent started: containers running from before
	// keep their condition until this agent has probed them.
	started time.Time

	mu sync.Mutex
	// written is what this writer last wrote per pod UID, with the pod's
	// resourceVersion after the write: a cache that has not caught up yet
	// is not mistaken for someone else's change.
	written map[types.UID]writeMark
	// changed is when a pod's probe result last changed, for the
	// result → condition latency.
	changed map[types.NamespacedName]time.Time
}

type writeMark struct {
	v  verdict
	rv uint64
}

// Options are the Writer's inputs.
type Options struct {
	Client   kube.Client
	Informer cache.SharedIndexInformer // the node's pods (podwatch)
	Lister   listersv1.PodLister
	Status   prober.StatusSource
	Clock    clock.WithTicker // default real
	Log      *zap.Logger
	Metrics  *Metrics // default: unregistered
}

// New returns a Writer; it registers an event handler on the informer.
func New(o Options) (*Writer, error) {
	if o.Client == nil || o.Informer == nil || o.Lister == nil || o.Status == nil {
		return nil, errors.New("readiness: a client, the pod informer and lister, and the engine are required")
	}
	w := &Writer{
		client: o.Client, informer: o.Informer, lister: o.Lister, status: o.Status,
		clock: o.Clock, log: o.Log, m: o.Metrics,
		written: map[types.UID]writeMark{}, changed: map[types.NamespacedName]time.Time{},
	}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	w.started = w.clock.Now()
	if w.log == nil {
		w.log = zap.NewNop()
	}
	if w.m == nil {
		w.m = NewMetrics()
	}
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](retryMin, retryMax),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "probelet_readiness", Clock: w.clock})
	if _, err := o.Informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.podChanged,
		UpdateFunc: func(_, cur any) { w.podChanged(cur) },
		DeleteFunc: w.podGone,
	}); err != nil {
		return nil, fmt.Errorf("readiness: %w", err)
	}
	return w, nil
}

// Run writes conditions until ctx ends or the engine's subscription closes.
// Writes happen on this goroutine; the engine only ever offers changes to a
// buffered channel, so a slow or absent API server never slows probing.
func (w *Writer) Run(ctx context.Context) error {
	changes, cancel := w.status.SubscribeResults(changeBuffer)
	defer cancel()
	defer w.queue.ShutDown()
	go w.work()
	for {
		select {
		case <-ctx.Done():
			return nil
		case rc, ok := <-changes:
			if !ok {
				return nil
			}
			if rc.Type == probe.Readiness || rc.Type == probe.Startup {
				w.resultChanged(rc)
			}
		}
	}
}

func (w *Writer) resultChanged(rc prober.ResultChange) {
	key := types.NamespacedName{Namespace: rc.PodNamespace, Name: rc.PodName}
	w.mu.Lock()
	if _, ok := w.changed[key]; !ok {
		w.changed[key] = rc.Time
	}
	w.mu.Unlock()
	w.queue.Add(key)
}

func (w *Writer) podChanged(obj any) {
	if pod, ok := obj.(*corev1.Pod); ok && hasGate(pod) {
		w.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	}
}

func (w *Writer) podGone(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		w.mu.Lock()
		delete(w.written, pod.UID)
		delete(w.changed, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		w.mu.Unlock()
	}
}

// work drains the queue; a key is handled by one worker at a time, and
// keys added meanwhile coalesce.
func (w *Writer) work() {
	for {
		key, quit := w.queue.Get()
		if quit {
			return
		}
		if err := w.sync(context.Background(), key); err != nil {
			w.m.writes.WithLabelValues("error").Inc()
			if w.queue.NumRequeues(key) == 0 {
				w.log.Warn("Cannot write the readiness condition; retrying", zap.Stringer("pod", key), zap.Error(err))
			}
			w.queue.AddRateLimited(key)
		} else {
			w.queue.Forget(key)
		}
		w.queue.Done(key)
	}
}

// sync brings one pod's condition in line with the engine.
func (w *Writer) sync(ctx context.Context, key types.NamespacedName) error {
	pod, err := w.lister.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || !hasGate(pod) {
		return err
	}
	// The probes the pod was created with, as the engine runs them: not the
	// API object's annotation, which may have changed since. A pod the
	// engine does not know yet keeps its condition until it does.
	parsed, known := w.status.PodSpec(string(pod.UID))
	if !known {
		return nil
	}
	v, undecided := decide(parsed, w.status.Pod(string(pod.UID)), runningInAPI(pod), w.started)
	if undecided {
		return nil
	}
	cur, has := current(pod)
	if has && v.matches(cur) {
		w.settled(pod, v)
		return nil
	}
	if w.inFlight(pod, v) {
		return nil // our write has not reached the cache yet
	}
	lastTransition := metav1.NewTime(w.clock.Now())
	if has && cur.Status == v.status {
		lastTransition = cur.LastTransitionTime
	}
	updated, err := w.patch(ctx, pod, v, lastTransition)
	if err != nil {
		return err
	}
	w.wrote(pod, v, updated, key)
	return nil
}

// patch writes the condition with a strategic merge patch on pods/status:
// conditions merge by type, so the kubelet's own conditions stay (a JSON
// merge patch would replace the list). The UID makes it a precondition: a
// pod recreated under the same name is not touched.
func (w *Writer) patch(ctx context.Context, pod *corev1.Pod, v verdict, lastTransition metav1.Time) (*corev1.Pod, error) {
	cond := map[string]any{
		"type": ConditionType, "status": v.status, "lastTransitionTime": lastTransition,
		"reason": nullIfEmpty(v.reason), "message": nullIfEmpty(v.message),
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status":   map[string]any{"conditions": []any{cond}},
	})
	if err != nil {
		return nil, err
	}
	return w.client.PatchPodStatus(ctx, pod.Namespace, pod.Name, body)
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// inFlight reports whether this writer already wrote v for pod at a
// resourceVersion the informer's copy has not reached.
func (w *Writer) inFlight(pod *corev1.Pod, v verdict) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	mark, ok := w.written[pod.UID]
	if !ok || mark.v != v {
		return false
	}
	rv, err := strconv.ParseUint(pod.ResourceVersion, 10, 64)
	// A copy at our write's version would already show v; one above it is
	// someone else's change, which gets v written again.
	return err == nil && rv <= mark.rv
}

func (w *Writer) wrote(pod *corev1.Pod, v verdict, updated *corev1.Pod, key types.NamespacedName) {
	rv, _ := strconv.ParseUint(updated.ResourceVersion, 10, 64)
	w.mu.Lock()
	w.written[pod.UID] = writeMark{v: v, rv: rv}
	since, ok := w.changed[key]
	delete(w.changed, key)
	w.mu.Unlock()
	w.m.writes.WithLabelValues("ok").Inc()
	if ok {
		w.m.latency.Observe(w.clock.Since(since).Seconds())
	}
	w.log.Info("Readiness condition written", zap.Stringer("pod", key), zap.String("status", string(v.status)),
		zap.String("reason", v.reason), zap.String("message", v.message))
}

// settled forgets the pending change of a pod whose condition is right.
func (w *Writer) settled(pod *corev1.Pod, v verdict) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.changed, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	if mark, ok := w.written[pod.UID]; ok && mark.v != v {
		delete(w.written, pod.UID)
	}
}
