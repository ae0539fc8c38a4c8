// Package podwatch watches the pods bound to this node in the API server
// and hands what the runtime cannot know (spec, deletion) to the node
// cache. NRI stays the truth about what runs.
package podwatch

import (
	"context"
	"errors"
	"fmt"
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
	wait := kube.StartInformer(ctx, w.informer)
	if cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
		w.log.Info("Watching the node's pods in the API server", zap.Int("pods", len(w.informer.GetStore().ListKeys())))
	}
	wait()
	return nil
}

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
	return a
}
