package readiness_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/kube/kubetest"
	"github.com/probelet/probelet/kube/readiness"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/prober/spec"
)

func gatedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", ResourceVersion: "1",
			Annotations: map[string]string{spec.AnnotationProbes: `{"web": {"readinessProbe": {"tcpSocket": {"port": 80}}}}`}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "web"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: readiness.ConditionType}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse},
		}},
	}
}

func webStatus(ready bool) prober.ContainerStatus {
	r := results.Failure
	if ready {
		r = results.Success
	}
	return prober.ContainerStatus{PodUID: "u1", PodName: "web", PodNamespace: "default", ContainerName: "web", ContainerID: "c1",
		State: node.StateRunning, Started: true, Ready: ready,
		Probes: map[probe.Type]prober.ProbeStatus{probe.Readiness: {Type: probe.Readiness, Result: r, LastProbeTime: time.Unix(1e9, 0), FailureThreshold: 3}}}
}

type env struct {
	client  *fake.Clientset
	status  *servertest.Status
	lister  listersv1.PodLister
	patches atomic.Int32
	fail    atomic.Int32 // patches still to fail
}

func start(t *testing.T, objs ...runtime.Object) *env {
	t.Helper()
	e := &env{client: fake.NewClientset(objs...), status: servertest.NewStatus()}
	// The engine holds the probes each pod was created with.
	memo := spec.NewMemo(1 << 20)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			e.status.SetPodSpec(string(p.UID), memo.Parse(p.Annotations[spec.AnnotationProbes]))
		}
	}
	e.client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			t.Errorf("patched %s, want only pods/status", a.GetSubresource())
		}
		if e.fail.Add(-1) >= 0 {
			return true, nil, errors.New("API server unavailable")
		}
		e.patches.Add(1)
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(e.client, 0)
	pods := factory.Core().V1().Pods()
	e.lister = pods.Lister()
	w, err := readiness.New(readiness.Options{Client: kubetest.Client(e.client), Informer: pods.Informer(), Lister: pods.Lister(), Status: e.status})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
	testutil.WaitFor(t, "the writer's engine subscription", func() bool { n, _, _ := e.status.ResultStats(); return n == 1 })
	return e
}

func (e *env) condition(t *testing.T) (corev1.PodCondition, []corev1.PodCondition) {
	t.Helper()
	pod, err := e.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == readiness.ConditionType {
			return c, pod.Status.Conditions
		}
	}
	return corev1.PodCondition{}, pod.Status.Conditions
}

func (e *env) publish(ready bool) {
	e.status.Set(webStatus(ready))
	r := results.Failure
	if ready {
		r = results.Success
	}
	e.status.PublishResult(prober.ResultChange{Time: time.Now(), PodUID: "u1", PodName: "web", PodNamespace: "default",
		ContainerName: "web", ContainerID: "c1", Type: probe.Readiness, Result: r})
}

func (e *env) waitCondition(t *testing.T, want corev1.ConditionStatus) corev1.PodCondition {
	t.Helper()
	var c corev1.PodCondition
	testutil.WaitFor(t, "the condition "+string(want), func() bool { c, _ = e.condition(t); return c.Status == want })
	return c
}

func TestConditionFollowsReadinessAndKeepsTheKubeletsConditions(t *testing.T) {
	e := start(t, gatedPod())
	c := e.waitCondition(t, corev1.ConditionFalse)
	if c.Reason != readiness.ReasonNotCreatedYet {
		t.Fatalf("condition before the container runs = %+v", c)
	}
	e.publish(false)
	testutil.WaitFor(t, "the readiness failure", func() bool { c, _ = e.condition(t); return c.Reason == readiness.ReasonNotReady })
	if c.Status != corev1.ConditionFalse || c.Message == "" || c.LastTransitionTime.IsZero() {
		t.Fatalf("False condition = %+v, want the reason and message naming the container", c)
	}
	e.publish(true)
	c = e.waitCondition(t, corev1.ConditionTrue)
	if c.Reason != "" {
		t.Fatalf("True condition = %+v", c)
	}
	_, all := e.condition(t)
	if len(all) != 3 {
		t.Fatalf("conditions = %+v, want the kubelet's two and ours", all)
	}
}

func TestWritesOnlyOnChange(t *testing.T) {
	e := start(t, gatedPod())
	e.publish(true)
	e.waitCondition(t, corev1.ConditionTrue)
	writes := e.patches.Load()
	for range 5 { // the same verdict again and again
		e.publish(true)
	}
	e.publish(false)
	e.waitCondition(t, corev1.ConditionFalse)
	if got := e.patches.Load() - writes; got != 1 {
		t.Fatalf("writes after 5 unchanged results and 1 change = %d, want 1", got)
	}
}

func TestRetriesWhileTheAPIServerIsAway(t *testing.T) {
	e := start(t, gatedPod())
	e.fail.Store(3)
	e.publish(true)
	e.waitCondition(t, corev1.ConditionTrue)
	if e.fail.Load() >= 0 {
		t.Fatalf("the failing patches were not all tried: %d left", e.fail.Load())
	}
}

func TestPodsWithoutTheGateAreLeftAlone(t *testing.T) {
	plain := gatedPod()
	plain.Name, plain.UID, plain.Spec.ReadinessGates = "plain", "u2", nil
	e := start(t, plain, gatedPod())
	// The plain pod's change is queued first; one worker takes keys in
	// order, so once the gated pod is written the plain one was handled.
	e.status.PublishResult(prober.ResultChange{PodUID: "u2", PodName: "plain", PodNamespace: "default", Type: probe.Readiness})
	e.publish(true)
	e.waitCondition(t, corev1.ConditionTrue)
	pod, err := e.client.CoreV1().Pods("default").Get(context.Background(), "plain", metav1.GetOptions{})
	if err != nil || len(pod.Status.Conditions) != 2 {
		t.Fatalf("the pod without the gate was written: %+v, %v", pod.Status.Conditions, err)
	}
}

// `kubectl annotate --overwrite` of the probes on a running pod changes
// nothing: the condition follows the probes the pod was created with, which
// the engine runs, not the API object's annotation.
func TestConditionFollowsTheProbesThePodWasCreatedWith(t *testing.T) {
	other := gatedPod()
	other.Name, other.UID, other.Annotations = "other", "u3", nil
	e := start(t, gatedPod(), other)
	e.publish(false)
	testutil.WaitFor(t, "the readiness failure", func() bool { c, _ := e.condition(t); return c.Reason == readiness.ReasonNotReady })

	pod, err := e.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{spec.AnnotationProbes: "{}"}
	if _, err := e.client.CoreV1().Pods("default").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the informer to see the new annotation", func() bool {
		p, err := e.lister.Pods("default").Get("web")
		return err == nil && p.Annotations[spec.AnnotationProbes] == "{}"
	})
	// The pod's key is queued with the new annotation in the cache, then
	// the other pod's: one worker takes keys in order, so once the other
	// pod is written the annotated one was synced.
	e.publish(false)
	e.status.PublishResult(prober.ResultChange{PodUID: "u3", PodName: "other", PodNamespace: "default", Type: probe.Readiness})
	testutil.WaitFor(t, "the other pod's condition", func() bool {
		p, err := e.client.CoreV1().Pods("default").Get(context.Background(), "other", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, ok := condition(p)
		return ok && c.Status == corev1.ConditionTrue
	})
	if c, _ := e.condition(t); c.Status != corev1.ConditionFalse || c.Reason != readiness.ReasonNotReady {
		t.Fatalf("condition after the annotation changed = %+v, want still False: the readiness probe still fails", c)
	}
}

// A pod the engine does not know (yet) keeps its condition.
func TestPodUnknownToTheEngineIsLeftAlone(t *testing.T) {
	unknown := gatedPod()
	unknown.Name, unknown.UID = "unknown", "u4"
	e := start(t, gatedPod())
	e.status.SetPodSpec("u4", nil)
	if _, err := e.client.CoreV1().Pods("default").Create(context.Background(), unknown, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the informer to see the pod", func() bool { _, err := e.lister.Pods("default").Get("unknown"); return err == nil })
	// Queued before the known pod's change: synced before it is written.
	e.status.PublishResult(prober.ResultChange{PodUID: "u4", PodName: "unknown", PodNamespace: "default", Type: probe.Readiness})
	e.publish(true)
	e.waitCondition(t, corev1.ConditionTrue)
	p, err := e.client.CoreV1().Pods("default").Get(context.Background(), "unknown", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := condition(p); ok {
		t.Fatalf("the condition of a pod the engine does not know was written: %+v", c)
	}
}

func condition(p *corev1.Pod) (corev1.PodCondition, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == readiness.ConditionType {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}
