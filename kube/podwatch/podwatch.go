// Package podwatch watches the pods bound to this node in the API server
// and hands what the runtime cannot know (spec, deletion) to the node
// cache. NRI stays the truth about what runs.
package podwatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/node"
)

// Sink takes what the API server says about a pod; a nil p says it is gone
// there. *lifecycle.Cache implements it. Calls must not block.
type Sink interface {
	SetAPIPod(at time.Time, uid string, p *node.APIPod)
}

// resync is how often the informer replays its cache (a safety net; watch
// events carry every change).
const resync = 10 * time.Minute

// Watcher is a node-scoped pod informer feeding a Sink.
type Watcher struct {
	nodeName string
	informer cache.SharedIndexInformer
	failures atomic.Int64 // list or watch failures, for the log
	lister   listersv1.PodLister
	sink     Sink
	clock    clock.PassiveClock
	log      *zap.Logger
}

// New returns a watcher of the pods with spec.nodeName == nodeName.
func New(client kube.Client, nodeName string, sink Sink, log *zap.Logger) (*Watcher, error) {
	if client == nil || sink == nil || nodeName == "" {
		return nil, errors.New("podwatch: a client, a node name and a sink are required")
	}
	if log == nil {
		log = zap.NewNop()
	}
	informer := cache.NewSharedIndexInformer(client.NodePods(nodeName), &corev1.Pod{}, resync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	w := &Watcher{nodeName: nodeName, informer: informer, lister: listersv1.NewPodLister(informer.GetIndexer()), sink: sink,
		clock: clock.RealClock{}, log: log}
	if err := w.informer.SetWatchErrorHandlerWithContext(w.watchFailed); err != nil {
		return nil, fmt.Errorf("podwatch: %w", err)
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.set,
		UpdateFunc: func(_, cur any) { w.set(cur) },
		DeleteFunc: w.gone,
	}); err != nil {
		return nil, fmt.Errorf("podwatch: %w", err)
	}
	return w, nil
}

// Informer is the shared pod informer, for outputs that react to pod
// changes (the readiness condition writer).
func (w *Watcher) Informer() cache.SharedIndexInformer { return w.informer }

// Lister reads the informer's cache.
func (w *Watcher) Lister() listersv1.PodLister { return w.lister }

// Run runs the informer until ctx ends. It logs, and does not fail, while
// the API server cannot be reached: probing goes on without it, and the
// informer catches up when it returns. It returns once the informer has
// stopped, or kube.StopWait after ctx ended.
func (w *Watcher) Run(ctx context.Context) error {
	kube.StartInformer(ctx, w.informer)()
	return nil
}

// watchFailed logs the informer's failed lists and watches (the API client
// counts them) on the first and then every 50th, so an API server that
// stays away does not flood the log; the reflector retries with back-off.
func (w *Watcher) watchFailed(_ context.Context, _ *cache.Reflector, err error) {
	if n := w.failures.Add(1); n == 1 || n%50 == 0 {
		w.log.Warn("Cannot list or watch the node's pods in the API server; retrying", zap.Int64("failures", n), zap.Error(err))
	}
}

// Pods counts the pods in the informer's cache.
func (w *Watcher) Pods() int { return len(w.informer.GetStore().ListKeys()) }

// HasSynced reports whether the first listing arrived.
func (w *Watcher) HasSynced() bool { return w.informer.HasSynced() }

func (w *Watcher) set(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != w.nodeName {
		return // the field selector already keeps other nodes' pods out
	}
	w.sink.SetAPIPod(w.clock.Now(), string(pod.UID), APIPod(pod))
}

func (w *Watcher) gone(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		w.sink.SetAPIPod(w.clock.Now(), string(pod.UID), nil)
	}
}

// noAnnotations is a pod's without any: known to be none, unlike nil.
var noAnnotations = map[string]string{}

// APIPod is what the node model takes from an API pod. The spec is shared
// with the informer's cache, which never modifies it.
func APIPod(pod *corev1.Pod) *node.APIPod {
	a := &node.APIPod{Spec: &pod.Spec, DeletionGracePeriodSeconds: pod.DeletionGracePeriodSeconds, Annotations: pod.Annotations}
	if a.Annotations == nil {
		a.Annotations = noAnnotations
	}
	if pod.DeletionTimestamp != nil {
		a.DeletionTimestamp = pod.DeletionTimestamp.Time
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.AllContainersRestarting && c.Status == corev1.ConditionTrue {
			a.AllContainersRestarting = true
		}
	}
	return a
}
