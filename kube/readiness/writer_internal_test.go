package readiness

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/kube/kubetest"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/prober/spec"
)

// TestACacheBehindOurWriteIsNotWrittenAgain drives sync by hand against a
// pod cache the test controls, so the informer's lag is exact. The
// resourceVersions are opaque strings, as the API server may make them:
// whether the cache has seen the write is judged by the condition it holds.
func TestACacheBehindOurWriteIsNotWrittenAgain(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "web"}
	before := corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, Reason: ReasonNotReady,
		Message: "container web: not ready", LastTransitionTime: metav1.NewTime(time.Unix(1e9, 0))}
	ours := corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionTrue, Message: messageAllReady,
		LastTransitionTime: metav1.NewTime(time.Unix(2e9, 0))}
	theirs := corev1.PodCondition{Type: ConditionType, Status: corev1.ConditionFalse, Reason: "ProbeletUnavailable",
		Message: "the node's probelet went silent", LastTransitionTime: metav1.NewTime(time.Unix(3e9, 0))}

	tests := []struct {
		name string
		// rv and cond make the cache's copy at the second sync, after
		// the first sync wrote True over before.
		rv        string
		cond      *corev1.PodCondition
		after     time.Duration // clock advance between the syncs
		wantWrite bool
	}{
		{name: "cache not caught up", rv: "opaque-a", cond: &before},
		{name: "someone else's change to the pod, not to the condition", rv: "opaque-b", cond: &before},
		{name: "cache caught up", rv: "opaque-c", cond: &ours},
		{name: "someone else overwrote the condition", rv: "opaque-d", cond: &theirs, wantWrite: true},
		{name: "someone else removed the condition", rv: "opaque-e", cond: nil, wantWrite: true},
		{name: "the echo never came", rv: "opaque-a", cond: &before, after: echoWait, wantWrite: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := gated("opaque-a", &before)
			client := fake.NewClientset(pod.DeepCopy())
			patches := 0
			client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				patches++
				return false, nil, nil
			})
			store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if err := store.Add(pod); err != nil {
				t.Fatal(err)
			}
			clk := clocktesting.NewFakeClock(time.Unix(1e9, 0))
			status := servertest.NewStatus()
			w, err := New(Options{Client: kubetest.Client(client), Status: status, Clock: clk,
				Informer: informers.NewSharedInformerFactory(client, 0).Core().V1().Pods().Informer(),
				Lister:   listersv1.NewPodLister(store)})
			if err != nil {
				t.Fatal(err)
			}
			w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
				workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Clock: clk})
			defer w.queue.ShutDown()
			status.Set(readyWeb())
			status.SetPodSpec("u1", spec.NewMemo(1<<20).Parse(webOnly)) // the probes the pod was created with

			if err := w.sync(context.Background(), key); err != nil || patches != 1 {
				t.Fatalf("first sync: err %v, %d writes; want True written once", err, patches)
			}
			if err := store.Update(gated(tt.rv, tt.cond)); err != nil {
				t.Fatal(err)
			}
			clk.Step(tt.after)
			if err := w.sync(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if got := patches == 2; got != tt.wantWrite {
				t.Errorf("wrote again: %v, want %v", got, tt.wantWrite)
			}
		})
	}
}

func gated(rv string, cond *corev1.PodCondition) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", ResourceVersion: rv,
			Annotations: map[string]string{spec.AnnotationProbes: webOnly}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: ConditionType}}},
	}
	if cond != nil {
		pod.Status.Conditions = []corev1.PodCondition{*cond}
	}
	return pod
}

func readyWeb() prober.ContainerStatus {
	return prober.ContainerStatus{PodUID: "u1", PodName: "web", PodNamespace: "default", ContainerName: "web", ContainerID: "c1",
		State: node.StateRunning, Started: true, Ready: true, StartedAt: time.Unix(2e9, 0),
		Probes: map[probe.Type]prober.ProbeStatus{probe.Readiness: {Type: probe.Readiness, Result: results.Success, LastProbeTime: time.Unix(2e9, 0)}}}
}
