package webhook

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/probelet/probelet/probespec"
)

const (
	// missedMessage is the Event's message on a pod created unconverted in
	// a managed namespace (probespec.EventWebhookMissed).
	missedMessage = "created while the probelet webhook was unavailable; the kubelet runs its probes"
	// recent bounds which pods a new leader reports: those created within
	// it (a pod reported by the previous leader may be reported again).
	recent = time.Hour
)

// Reporter finds the pods of managed namespaces that were admitted with
// kubelet probes the webhook would have moved — created while it was away
// (failurePolicy Ignore lets them through) — and reports each once: a
// Warning Event on the pod and OnMissed (a metric). A pod created before
// the label that makes it managed was last written was perhaps never sent
// to the webhook: it gets ReasonNotAsked and OnNotAsked instead, with the
// label's time, as the API keeps no time of the label's first write. Run
// it while leading.
type Reporter struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
	// Exclude are the namespaces the webhook never converts.
	Exclude    []string
	OnMissed   func()
	OnNotAsked func()
	Log        *zap.Logger
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
	if !ok || pod.CreationTimestamp.Time.Before(r.since) || slices.Contains(r.Exclude, pod.Namespace) {
		return
	}
	by, what := r.managedBy(pod)
	if by == nil {
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
	if err != nil || len(raw) > MaxObject {
		return // a pod the webhook admits unparsed, on purpose (too_large)
	}
	if d, err := Mutate(raw); err != nil || d.Patch == nil {
		return // converted, refused, or without probes
	}
	// The label's managed fields bound its first write from above: a pod
	// created before then was perhaps never sent to the webhook.
	if at := labelWritten(by.GetManagedFields()); at.After(pod.CreationTimestamp.Time) {
		r.log().Warn("A pod of a managed namespace kept its kubelet probes: created before the managed label was last written, so perhaps never sent to the webhook",
			zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("labelled", what), zap.Time("labelWritten", at))
		if r.Recorder != nil {
			r.Recorder.Eventf(pod, corev1.EventTypeWarning, probespec.EventWebhookNotAsked,
				"created at %s, before %s was last labelled %s=%s (at %s): the probelet webhook was not asked, or was unavailable, which the API cannot tell apart; the kubelet runs its probes",
				pod.CreationTimestamp.UTC().Format(time.RFC3339), what, probespec.LabelProbes, probespec.LabelManaged, at.UTC().Format(time.RFC3339))
		}
		if r.OnNotAsked != nil {
			r.OnNotAsked()
		}
		return
	}
	r.log().Warn("A pod of a managed namespace kept its kubelet probes: created while the webhook was unavailable",
		zap.String("pod", pod.Namespace+"/"+pod.Name))
	if r.Recorder != nil {
		r.Recorder.Event(pod, corev1.EventTypeWarning, probespec.EventWebhookMissed, missedMessage)
	}
	if r.OnMissed != nil {
		r.OnMissed()
	}
}

// managedBy returns what makes pod managed — the pod's own label, else
// its namespace's — and names it ("the pod", "namespace NS"); nil when
// neither is labelled managed.
func (r *Reporter) managedBy(pod *corev1.Pod) (metav1.Object, string) {
	if pod.Labels[probespec.LabelProbes] == probespec.LabelManaged {
		return pod, "the pod"
	}
	if ns, err := r.ns.Get(pod.Namespace); err == nil && ns.Labels[probespec.LabelProbes] == probespec.LabelManaged {
		return ns, "namespace " + ns.Name
	}
	return nil, ""
}

// labelWritten is when the managed label was last written, as the
// object's managed fields say: the latest time of a field manager that
// owns it (a manager's time moves with any change it makes, so it bounds
// the label's first write from above). Zero when no entry owns it.
func labelWritten(fields []metav1.ManagedFieldsEntry) time.Time {
	var at time.Time
	for _, f := range fields {
		if f.FieldsV1 == nil || f.Time == nil || !ownsLabel(f.FieldsV1.GetRawBytes()) {
			continue
		}
		if f.Time.After(at) {
			at = f.Time.Time
		}
	}
	return at
}

// ownsLabel reports whether a FieldsV1 set holds metadata.labels[Label].
func ownsLabel(raw []byte) bool {
	var set struct {
		Metadata struct {
			Labels map[string]json.RawMessage `json:"f:labels"`
		} `json:"f:metadata"`
	}
	if json.Unmarshal(raw, &set) != nil {
		return false
	}
	_, ok := set.Metadata.Labels["f:"+probespec.LabelProbes]
	return ok
}

func (r *Reporter) log() *zap.Logger {
	if r.Log == nil {
		return zap.NewNop()
	}
	return r.Log
}
