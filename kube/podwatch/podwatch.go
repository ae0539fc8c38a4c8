// Package podwatch watches the pods bound to this node in the API server
// and hands what the runtime cannot know (spec, deletion, whether an admin
// let the pod's namespace probe any host) to the node cache. NRI stays the
// truth about what runs.
package podwatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

// Sink takes what the API server says about a pod; a nil p says it is gone
// there. *lifecycle.Cache implements it. Calls must not block.
type Sink interface {
	SetAPIPod(at time.Time, uid string, p *node.APIPod)
}

// resync is how often the informer replays its cache (a safety net; watch
// events carry every change).
const resync = 10 * time.Minute

// Watcher is a node-scoped pod informer feeding a Sink, with a namespace
// informer for the namespaces' probe host grants (a cluster has few
// namespaces, so every node watching them all is cheap).
type Watcher struct {
	nodeName   string
	informer   cache.SharedIndexInformer
	namespaces cache.SharedIndexInformer
	failures   atomic.Int64 // list or watch failures, for the log
	lister     listersv1.PodLister
	nsLister   listersv1.NamespaceLister
	sink       Sink
	clock      clock.PassiveClock
	log        *zap.Logger
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
	namespaces := cache.NewSharedIndexInformer(client.Namespaces(), &corev1.Namespace{}, resync, cache.Indexers{})
	w := &Watcher{nodeName: nodeName, informer: informer, lister: listersv1.NewPodLister(informer.GetIndexer()), sink: sink,
		namespaces: namespaces, nsLister: listersv1.NewNamespaceLister(namespaces.GetIndexer()),
		clock: clock.RealClock{}, log: log}
	for _, inf := range []cache.SharedIndexInformer{w.informer, w.namespaces} {
		if err := inf.SetWatchErrorHandlerWithContext(w.watchFailed); err != nil {
			return nil, fmt.Errorf("podwatch: %w", err)
		}
	}
	if _, err := w.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.set,
		UpdateFunc: func(_, cur any) { w.set(cur) },
		DeleteFunc: w.gone,
	}); err != nil {
		return nil, fmt.Errorf("podwatch: %w", err)
	}
	if _, err := w.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: w.namespaceChanged,
		UpdateFunc: func(old, cur any) {
			if allowsProbeHost(old) != allowsProbeHost(cur) {
				w.namespaceChanged(cur)
			}
		},
		DeleteFunc: w.namespaceChanged,
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
	pods, namespaces := kube.StartInformer(ctx, w.informer), kube.StartInformer(ctx, w.namespaces)
	pods()
	namespaces()
	return nil
}

// namespaceChanged hands the node's pods of a namespace whose grant may
// have changed (it was listed, relabelled or deleted) to the sink again.
func (w *Watcher) namespaceChanged(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	pods, err := w.lister.Pods(ns.Name).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pod := range pods {
		w.set(pod)
	}
}

// grant says whether the pod's namespace lets its probes name any host,
// and whether that is known: the namespace is in the informer's cache, or
// the first listing came without it.
func (w *Watcher) grant(namespace string) (allowed, known bool) {
	ns, err := w.nsLister.Get(namespace)
	if err != nil {
		return false, w.namespaces.HasSynced()
	}
	return allowsProbeHost(ns), true
}

// allowsProbeHost reports whether obj is a namespace an admin labelled
// probelet.io/allow-probe-host=true.
func allowsProbeHost(obj any) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && ns.Labels[probespec.LabelAllowProbeHost] == "true"
}

// watchFailed logs the informer's failed lists and watches (the API client
// counts them) on the first and then every 50th, so an API server that
// stays away does not flood the log; the reflector retries with back-off.
func (w *Watcher) watchFailed(_ context.Context, _ *cache.Reflector, err error) {
	if n := w.failures.Add(1); n == 1 || n%50 == 0 {
		w.log.Warn("Cannot list or watch the node's pods or the namespaces in the API server; retrying", zap.Int64("failures", n), zap.Error(err))
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
	a := APIPod(pod)
	a.ProbeHostAllowed, a.NamespaceKnown = w.grant(pod.Namespace)
	w.sink.SetAPIPod(w.clock.Now(), string(pod.UID), a)
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
