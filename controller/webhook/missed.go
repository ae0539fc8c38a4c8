package webhook

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// Label marks a namespace, or a pod, whose pods the webhook converts:
// probelet.io/probes=managed.
const (
	Label        = "probelet.io/probes"
	LabelManaged = "managed"
	// ReasonMissed is the Event on a pod created unconverted in a managed
	// namespace.
	ReasonMissed = "ProbeletWebhookMissed"
	// missedMessage is that Event's message.
	missedMessage = "created while the probelet webhook was unavailable; the kubelet runs its probes"
	// recent bounds which pods a new leader reports: those created within
	// it (a pod reported by the previous leader may be reported again).
	recent = time.Hour
)

// Reporter finds the pods of managed namespaces that were admitted with
// kubelet probes the webhook would have moved — created while it was away
// (failurePolicy Ignore lets them through) — and reports each once: a
// Warning Event on the pod and OnMissed (a metric). Run it while leading.
type Reporter struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
	// Exclude are the namespaces the webhook never converts.
	Exclude  []string
	OnMissed func()
	Log      *zap.Logger
	// Informers is the cluster-wide informer factory to share (the
	// monitor's pods); nil: the Reporter makes its own.
	Informers informers.SharedInformerFactory

	mu       sync.Mutex
	reported map[types.UID]bool
	ns       listersv1.NamespaceLister
	since    time.Time
}

// Run reports until ctx ends.
func (r *Reporter) Run(ctx context.Context) error {
	r.reported, r.since = map[types.UID]bool{}, time.Now().Add(-recent)
	f := r.Informers
	if f == nil {
		f = informers.NewSharedInformerFactory(r.Client, 0)
		defer f.Shutdown()
	}
	// Namespaces first: a pod is judged by its namespace's label.
	nsInf := f.Core().V1().Namespaces()
	r.ns = nsInf.Lister()
	nsSynced := nsInf.Informer().HasSynced
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nsSynced) {
		return nil
	}
	pods := f.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: r.check, DeleteFunc: r.forget}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	<-ctx.Done()
	return nil
}

// forget drops a deleted pod from the reported set.
func (r *Reporter) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		r.mu.Lock()
		delete(r.reported, pod.UID)
		r.mu.Unlock()
	}
}

// check reports pod if it was missed.
func (r *Reporter) check(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.CreationTimestamp.Time.Before(r.since) || slices.Contains(r.Exclude, pod.Namespace) || !r.managed(pod) {
		return
	}
	r.mu.Lock()
	seen := r.reported[pod.UID]
	r.reported[pod.UID] = true
	r.mu.Unlock()
	if seen {
		return
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		return
	}
	if d, err := Mutate(raw); err != nil || d.Patch == nil {
		return // converted, refused, or without probes
	}
	r.log().Warn("A pod of a managed namespace kept its kubelet probes: created while the webhook was unavailable",
		zap.String("pod", pod.Namespace+"/"+pod.Name))
	if r.Recorder != nil {
		r.Recorder.Event(pod, corev1.EventTypeWarning, ReasonMissed, missedMessage)
	}
	if r.OnMissed != nil {
		r.OnMissed()
	}
}

// managed reports whether the pod or its namespace is labelled managed.
func (r *Reporter) managed(pod *corev1.Pod) bool {
	if pod.Labels[Label] == LabelManaged {
		return true
	}
	ns, err := r.ns.Get(pod.Namespace)
	return err == nil && ns.Labels[Label] == LabelManaged
}

func (r *Reporter) log() *zap.Logger {
	if r.Log == nil {
		return zap.NewNop()
	}
	return r.Log
}
