package readiness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

// Retry bounds for a failed write: fast enough that the condition is right
// within a few seconds of the API server's return, slow enough not to
// hammer it while it is away.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
	// changeBuffer is the engine subscription's buffer; a change lost to
	// a burst beyond it is caught by the next resync pass.
	changeBuffer = 4096
	// resyncPeriod is how often every gated pod is checked against the
	// engine, as the kubelet's status manager syncs every pod each 10 s
	// (syncPeriod): it repairs a missed change within seconds rather than
	// at the informer's 10-minute resync. A pass writes nothing when the
	// conditions are right.
	resyncPeriod = 10 * time.Second
	// echoWait bounds how long a write that the informer's copy does not
	// show yet counts as in flight; past it the pod is checked again.
	echoWait = 30 * time.Second
	// drainWait bounds the writes after Run's context ended: the engine
	// stops first, and its last changes are written if the API server
	// answers in time.
	drainWait = 2 * time.Second
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
	hold    func() string
	// held is the hold last logged; only the worker touches it.
	held string
	// recheck asks the loop for a resync pass (Recheck).
	recheck chan struct{}

	mu sync.Mutex
	// written is what this writer last wrote per pod UID, and what the
	// condition was before: a cache that has not caught up yet is not
	// mistaken for someone else's change.
	written map[types.UID]writeMark
	// changed is when a pod's probe result last changed, for the
	// result → condition latency.
	changed map[types.NamespacedName]time.Time
}

// writeMark is one write of the condition. resourceVersions are opaque
// (the API only promises equality), so the cache's copy is judged by the
// condition it holds: our write changes only our condition, so a copy that
// still holds the condition as it was before has not seen the write yet,
// whatever else moved.
//
// Writes can overlap: a second verdict written before the first one's echo
// arrived makes the cache pass through the first write on its way to the
// second. So the mark keeps every condition the copy may still show on the
// way: the one before the first write of the chain, and each of our own
// writes since.
type writeMark struct {
	v      verdict
	before []corev1.PodCondition // zero Type: there was none
	ours   corev1.PodCondition   // the condition written
	at     time.Time
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
	// Hold says why this node's probelet is not renewing its Lease now
	// (heartbeat.Holding), "" when it is; nil: never. While it holds, a
	// condition probelet-controller wrote stays as it is.
	Hold func() string
}

// New returns a Writer. It starts nothing: Run does.
func New(o Options) (*Writer, error) {
	if o.Client == nil || o.Informer == nil || o.Lister == nil || o.Status == nil {
		return nil, errors.New("readiness: a client, the pod informer and lister, and the engine are required")
	}
	w := &Writer{
		client: o.Client, informer: o.Informer, lister: o.Lister, status: o.Status,
		clock: o.Clock, log: o.Log, m: o.Metrics, hold: o.Hold,
		written: map[types.UID]writeMark{}, changed: map[types.NamespacedName]time.Time{},
		recheck: make(chan struct{}, 1),
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
	return w, nil
}

// Run writes conditions until ctx ends or the engine's subscription closes.
// Writes happen on one worker goroutine that Run starts and joins; the
// engine only ever offers changes to a buffered channel, so a slow or
// absent API server never slows probing.
func (w *Writer) Run(ctx context.Context) error {
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](retryMin, retryMax),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "probelet_readiness", Clock: w.clock})
	// The ticker comes before the subscription, so a subscriber seen
	// means a ticker running (tests step a fake clock).
	tick := w.clock.NewTicker(resyncPeriod)
	defer tick.Stop()
	changes, cancel := w.status.SubscribeResults(changeBuffer)
	defer cancel()
	reg, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.podChanged,
		UpdateFunc: func(_, cur any) { w.podChanged(cur) },
		DeleteFunc: w.podGone,
	})
	if err != nil {
		w.queue.ShutDown()
		return fmt.Errorf("readiness: %w", err)
	}
	defer func() { _ = w.informer.RemoveEventHandler(reg) }()

	// The worker's writes outlive the loop below by drainWait at most:
	// the engine stops first, and its last changes are written if the
	// API server answers in time.
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.work(wctx)
	}()
	w.loop(ctx, changes, tick)
	drain := time.AfterFunc(drainWait, stop) // real time: the API server's
	defer drain.Stop()
	w.queue.ShutDown() // the worker drains the queue, then returns
	wg.Wait()
	return nil
}

// loop queues pods whose condition may have to change until ctx ends or
// the engine's subscription closes.
func (w *Writer) loop(ctx context.Context, changes <-chan prober.ResultChange, tick clock.Ticker) {
	for {
		select {
		case <-ctx.Done():
			return
		case rc, ok := <-changes:
			if !ok {
				return
			}
			if rc.Type == probespec.Readiness || rc.Type == probespec.Startup {
				w.resultChanged(rc)
			}
		case <-tick.C():
			w.resync()
		case <-w.recheck:
			w.resync()
		}
	}
}

// Recheck asks for every gated pod to be checked soon, as the periodic
// pass does: the node Lease is renewed again, and the marks left to
// probelet-controller meanwhile are rewritten. It never blocks; any
// goroutine may call it, before or during Run.
func (w *Writer) Recheck() {
	select {
	case w.recheck <- struct{}{}:
	default: // one is pending already
	}
}

// resync queues every gated pod: a change the subscription lost, or a
// write whose echo never came, is repaired here.
func (w *Writer) resync() {
	pods, err := w.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		w.podChanged(pod)
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

// work drains the queue until it is shut down and empty; a key is handled
// by one worker at a time, and keys added meanwhile coalesce. A failed
// write is retried with the queue's exponential back-off.
func (w *Writer) work(ctx context.Context) {
	for {
		key, quit := w.queue.Get()
		if quit {
			return
		}
		if err := w.sync(ctx, key); err != nil {
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
	if has && w.heldBack(key, cur) {
		return nil
	}
	if wait, ok := w.inFlight(pod, v, cur, has); ok {
		w.queue.AddAfter(key, wait) // checked again should the echo never come
		return nil                  // our write has not reached the cache yet
	}
	lastTransition := metav1.NewTime(w.clock.Now())
	if has && cur.Status == v.status {
		lastTransition = cur.LastTransitionTime
	}
	if _, err := w.patch(ctx, pod, v, lastTransition); err != nil {
		return err
	}
	if !has {
		cur = corev1.PodCondition{}
	}
	w.wrote(pod, v, cur, v.condition(lastTransition), key)
	return nil
}

// heldBack reports whether cur is probelet-controller's mark and this
// probelet is not renewing its Lease: the controller judged this node's
// probes unchecked, and writing over its mark now would only start the two
// taking turns (the controller marks again once it sees the write). The
// next resync after the Lease is renewed writes the engine's verdict.
func (w *Writer) heldBack(key types.NamespacedName, cur corev1.PodCondition) bool {
	if w.hold == nil || (cur.Reason != probespec.ReasonProbeletUnavailable && cur.Reason != probespec.ReasonProbeletNotRunning) {
		return false
	}
	why := w.hold()
	if why != w.held && why != "" {
		w.log.Info("Leaving probelet-controller's marks alone while the node Lease is not renewed",
			zap.String("pod", key.String()), zap.String("reason", why))
	}
	w.held = why
	return why != ""
}

// patch writes the condition with a strategic merge patch on pods/status:
// conditions merge by type, so the kubelet's own conditions stay (a JSON
// merge patch would replace the list). The UID makes it a precondition: a
// pod recreated under the same name is not touched.
func (w *Writer) patch(ctx context.Context, pod *corev1.Pod, v verdict, lastTransition metav1.Time) (*corev1.Pod, error) {
	cond := map[string]any{
		"type": probespec.ConditionReady, "status": v.status, "lastTransitionTime": lastTransition,
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

// inFlight reports whether this writer already wrote v for pod and the
// informer's copy does not show it yet: the copy still holds the condition
// as it was before the write (cur, has). Anything else there is someone
// else's change, which gets v written again. wait is how long the mark
// still holds.
func (w *Writer) inFlight(pod *corev1.Pod, v verdict, cur corev1.PodCondition, has bool) (wait time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	mark, found := w.written[pod.UID]
	if !found || mark.v != v || !slices.ContainsFunc(mark.before, func(b corev1.PodCondition) bool { return sameCondition(b, cur, has) }) {
		return 0, false
	}
	wait = echoWait - w.clock.Since(mark.at)
	return wait, wait > 0
}

// sameCondition reports whether the copy's condition (c, has) is before
// (zero: absent).
func sameCondition(before, c corev1.PodCondition, has bool) bool {
	if !has {
		return before.Type == ""
	}
	return before.Type == c.Type && before.Status == c.Status && before.Reason == c.Reason &&
		before.Message == c.Message && before.LastTransitionTime.Equal(&c.LastTransitionTime)
}

// wrote marks the write of v (as the condition ours) over before.
func (w *Writer) wrote(pod *corev1.Pod, v verdict, before, ours corev1.PodCondition, key types.NamespacedName) {
	w.mu.Lock()
	now := w.clock.Now()
	chain := []corev1.PodCondition{before}
	// A write whose echo has not come yet: the copy may still show what
	// was before it, or it.
	if prev, ok := w.written[pod.UID]; ok && now.Sub(prev.at) < echoWait {
		chain = append(slices.Clone(prev.before), prev.ours)
	}
	w.written[pod.UID] = writeMark{v: v, before: chain, ours: ours, at: now}
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
