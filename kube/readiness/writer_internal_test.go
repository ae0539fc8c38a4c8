package readiness

import (
	"context"
	"encoding/json"
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
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// TestACacheBehindOurWriteIsNotWrittenAgain drives sync by hand against a
// pod cache the test controls, so the informer's lag is exact. The
// resourceVersions are opaque strings, as the API server may make them:
// whether the cache has seen the write is judged by the condition it holds.
func TestACacheBehindOurWriteIsNotWrittenAgain(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "web"}
	before := corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionFalse, Reason: probespec.ReasonReadinessProbeFailed,
		Message: "container web: not ready", LastTransitionTime: metav1.NewTime(time.Unix(1e9, 0))}
	ours := corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionTrue, Message: messageAllReady,
		LastTransitionTime: metav1.NewTime(time.Unix(2e9, 0))}
	theirs := corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionFalse, Reason: "ProbeletUnavailable",
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
			h := newSyncHarness(t, gated("opaque-a", &before))
			h.status.Set(readyWeb())
			w, store, clk := h.w, h.store, h.clk
			patches := &h.patches

			if err := w.sync(context.Background(), key); err != nil || *patches != 1 {
				t.Fatalf("first sync: err %v, %d writes; want True written once", err, patches)
			}
			if err := store.Update(gated(tt.rv, tt.cond)); err != nil {
				t.Fatal(err)
			}
			clk.Step(tt.after)
			if err := w.sync(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if got := *patches == 2; got != tt.wantWrite {
				t.Errorf("wrote again: %v, want %v", got, tt.wantWrite)
			}
		})
	}
}

// syncHarness is a Writer whose sync is driven by hand over a pod cache the
// test controls, on a fake clock.
type syncHarness struct {
	w       *Writer
	store   cache.Indexer
	clk     *clocktesting.FakeClock
	status  *servertest.Status
	patches int
	written []corev1.PodCondition // each patch's condition, as the API server keeps it
}

func newSyncHarness(t *testing.T, pod *corev1.Pod) *syncHarness {
	t.Helper()
	h := &syncHarness{clk: clocktesting.NewFakeClock(time.Unix(1e9, 0)), status: servertest.NewStatus()}
	client := fake.NewClientset(pod.DeepCopy())
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		h.patches++
		var body struct {
			Status corev1.PodStatus `json:"status"`
		}
		if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &body); err != nil || len(body.Status.Conditions) != 1 {
			t.Errorf("patch %s: %v", a.(k8stesting.PatchAction).GetPatch(), err)
		} else {
			h.written = append(h.written, body.Status.Conditions[0])
		}
		return false, nil, nil
	})
	h.store = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := h.store.Add(pod); err != nil {
		t.Fatal(err)
	}
	w, err := New(Options{Client: kubetest.Client(client), Status: h.status, Clock: h.clk,
		Informer: informers.NewSharedInformerFactory(client, 0).Core().V1().Pods().Informer(),
		Lister:   listersv1.NewPodLister(h.store)})
	if err != nil {
		t.Fatal(err)
	}
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
		workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Clock: h.clk})
	t.Cleanup(w.queue.ShutDown)
	h.status.SetPodSpec("u1", probespec.NewMemo(1<<20).Parse(webOnly)) // the probes the pod was created with
	h.w = w
	return h
}

// TestOverlappingWritesAreNotWrittenAgain: a verdict written before the
// echo of the previous one came makes the cache pass through the first
// write; that copy is ours on the way, not someone else's change.
func TestOverlappingWritesAreNotWrittenAgain(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "web"}
	h := newSyncHarness(t, gated("rv-0", nil))
	notReady := readyWeb()
	notReady.Ready = false
	notReady.Probes = readiness(results.Failure, false)
	h.status.Set(notReady)
	if err := h.w.sync(context.Background(), key); err != nil || h.patches != 1 {
		t.Fatalf("first sync: err %v, %d writes; want False written once", err, h.patches)
	}
	h.clk.Step(time.Second)
	h.status.Set(readyWeb())
	if err := h.w.sync(context.Background(), key); err != nil || h.patches != 2 {
		t.Fatalf("second sync, cache without either write: err %v, %d writes; want True written", err, h.patches)
	}
	first := h.written[0]
	for _, step := range []struct {
		name string
		cond *corev1.PodCondition
	}{
		{"no echo yet", nil},
		{"the first write's echo", &first},
	} {
		if err := h.store.Update(gated("rv-"+step.name, step.cond)); err != nil {
			t.Fatal(err)
		}
		if err := h.w.sync(context.Background(), key); err != nil || h.patches != 2 {
			t.Fatalf("%s: err %v, %d writes; want no write", step.name, err, h.patches)
		}
	}
}

func gated(rv string, cond *corev1.PodCondition) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", ResourceVersion: rv,
			Annotations: map[string]string{probespec.AnnotationProbes: webOnly}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: probespec.ConditionReady}}},
	}
	if cond != nil {
		pod.Status.Conditions = []corev1.PodCondition{*cond}
	}
	return pod
}

func readyWeb() prober.ContainerStatus {
	return prober.ContainerStatus{PodUID: "u1", PodName: "web", PodNamespace: "default", ContainerName: "web", ContainerID: "c1",
		State: node.StateRunning, Started: true, Ready: true, StartedAt: time.Unix(2e9, 0),
		Probes: map[probespec.Type]prober.ProbeStatus{probespec.Readiness: {Type: probespec.Readiness, Result: results.Success, LastProbeTime: time.Unix(2e9, 0)}}}
}

// TestControllersMarkStandsWhileTheLeaseIsNotRenewed: while this node's
// heartbeat holds its Lease back, probelet-controller's mark is left as
// it is (writing over it would start the two writers taking turns), and
// every other condition is still kept; once the Lease is renewed the
// engine's verdict replaces the mark.
func TestControllersMarkStandsWhileTheLeaseIsNotRenewed(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "web"}
	mark := func(reason string) *corev1.PodCondition {
		return &corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionFalse, Reason: reason,
			Message: "probelet on node n1 stopped renewing its Lease", LastTransitionTime: metav1.NewTime(time.Unix(1e9, 0))}
	}
	probeFailed := &corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionFalse, Reason: probespec.ReasonReadinessProbeFailed,
		Message: "container web: not ready", LastTransitionTime: metav1.NewTime(time.Unix(1e9, 0))}
	const stalled = "the probe scheduler is 2m0s behind"
	tests := []struct {
		name      string
		cond      *corev1.PodCondition
		hold      string
		wantWrite bool
	}{
		{name: "unavailable mark, Lease held back", cond: mark(probespec.ReasonProbeletUnavailable), hold: stalled},
		{name: "not-running mark, Lease held back", cond: mark(probespec.ReasonProbeletNotRunning), hold: "NRI is not connected"},
		{name: "unavailable mark, Lease renewed", cond: mark(probespec.ReasonProbeletUnavailable), wantWrite: true},
		{name: "probelet's own condition, Lease held back", cond: probeFailed, hold: stalled, wantWrite: true},
		{name: "no condition, Lease held back", hold: stalled, wantWrite: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newSyncHarness(t, gated("rv-1", tt.cond))
			h.status.Set(readyWeb())
			hold := tt.hold
			h.w.hold = func() string { return hold }
			if err := h.w.sync(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if got := h.patches == 1; got != tt.wantWrite {
				t.Fatalf("wrote: %v, want %v", got, tt.wantWrite)
			}
			if tt.wantWrite {
				return
			}
			hold = "" // the next beat renews: the resync writes the verdict
			if err := h.w.sync(context.Background(), key); err != nil {
				t.Fatal(err)
			}
			if h.patches != 1 || h.written[0].Status != corev1.ConditionTrue {
				t.Fatalf("after the renewal: %d writes %+v, want True written once", h.patches, h.written)
			}
		})
	}
}
