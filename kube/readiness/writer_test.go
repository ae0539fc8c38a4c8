package readiness_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/kube/kubetest"
	"github.com/probelet/probelet/kube/readiness"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

func gatedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", ResourceVersion: "1",
			Annotations: map[string]string{probespec.AnnotationProbes: `{"web": {"readinessProbe": {"tcpSocket": {"port": 80}}}}`}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "web"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: probespec.ConditionReady}}},
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
		Probes: map[probespec.Type]prober.ProbeStatus{probespec.Readiness: {Type: probespec.Readiness, Result: r, LastProbeTime: time.Unix(1e9, 0), FailureThreshold: 3}}}
}

type env struct {
	client  *fake.Clientset
	status  *servertest.Status
	lister  listersv1.PodLister
	patches atomic.Int32
	fail    atomic.Int32 // patches still to fail
	reg     *prometheus.Registry
	hold    atomic.Pointer[string] // what the node's heartbeat says (nil: renewing)
	w       *readiness.Writer
	stop    func() // ends Run and waits for it
}

func start(t *testing.T, objs ...runtime.Object) *env {
	t.Helper()
	e := newEnv(t, objs...)
	e.run(t, kubetest.Client(e.client), nil)
	return e
}

func newEnv(t *testing.T, objs ...runtime.Object) *env {
	t.Helper()
	e := &env{client: fake.NewClientset(objs...), status: servertest.NewStatus(), reg: prometheus.NewRegistry()}
	// The engine holds the probes each pod was created with.
	memo := probespec.NewMemo(1 << 20)
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			e.status.SetPodSpec(string(p.UID), memo.Parse(p.Annotations[probespec.AnnotationProbes]))
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
	return e
}

// run starts the writer over the fake clientset's informer, writing
// through client, on clk (nil: real).
func (e *env) run(t *testing.T, client kube.Client, clk clock.WithTicker) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(e.client, 0)
	pods := factory.Core().V1().Pods()
	e.lister = pods.Lister()
	m := readiness.NewMetrics()
	if err := m.Register(e.reg); err != nil {
		t.Fatal(err)
	}
	w, err := readiness.New(readiness.Options{Client: client, Informer: pods.Informer(), Lister: pods.Lister(), Status: e.status,
		Clock: clk, Metrics: m, Hold: func() string {
			if why := e.hold.Load(); why != nil {
				return *why
			}
			return ""
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.w = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
		})
	}
	t.Cleanup(func() { e.stop(); factory.Shutdown() })
	testutil.WaitFor(t, "the writer's engine subscription", func() bool { n, _, _ := e.status.ResultStats(); return n == 1 })
}

func (e *env) condition(t *testing.T) (corev1.PodCondition, []corev1.PodCondition) {
	t.Helper()
	pod, err := e.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == probespec.ConditionReady {
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
		ContainerName: "web", ContainerID: "c1", Type: probespec.Readiness, Result: r})
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
	if c.Reason != probespec.ReasonContainerNotCreated {
		t.Fatalf("condition before the container runs = %+v", c)
	}
	e.publish(false)
	testutil.WaitFor(t, "the readiness failure", func() bool { c, _ = e.condition(t); return c.Reason == probespec.ReasonReadinessProbeFailed })
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
	e.status.PublishResult(prober.ResultChange{PodUID: "u2", PodName: "plain", PodNamespace: "default", Type: probespec.Readiness})
	e.publish(true)
	e.waitCondition(t, corev1.ConditionTrue)
	pod, err := e.client.CoreV1().Pods("default").Get(context.Background(), "plain", metav1.GetOptions{})
	if err != nil || len(pod.Status.Conditions) != 2 {
		t.Fatalf("the pod without the gate was written: %+v, %v", pod.Status.Conditions, err)
	}
}

// TestAWriteToAHangingAPIServerEndsAtItsDeadlineAndIsRetried writes through
// the real REST client to an API server that accepts the first two writes
// and never answers them: each ends at the client's deadline, is counted,
// and retried with back-off; the third, answered, is the condition.
func TestAWriteToAHangingAPIServerEndsAtItsDeadlineAndIsRetried(t *testing.T) {
	const timeout = 300 * time.Millisecond
	type attempt struct {
		body string
		took time.Duration
	}
	attempts := make(chan attempt, 10)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPatch || r.URL.Path != "/api/v1/namespaces/default/pods/web/status" {
			t.Errorf("%s %s, want only the pod's status patched", r.Method, r.URL.Path)
		}
		if calls.Add(1) <= 2 {
			<-r.Context().Done() // hang until the client gives up
			attempts <- attempt{string(body), time.Since(start)}
			return
		}
		attempts <- attempt{string(body), time.Since(start)}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(gatedPod())
	}))
	defer srv.Close()
	apiMetrics := kube.NewMetrics()
	e := newEnv(t, gatedPod())
	if err := apiMetrics.Register(e.reg); err != nil {
		t.Fatal(err)
	}
	real, err := kube.NewClient(&rest.Config{Host: srv.URL, Timeout: timeout}, apiMetrics)
	if err != nil {
		t.Fatal(err)
	}
	e.run(t, patchThrough{Client: kubetest.Client(e.client), real: real}, nil)

	for i := range 3 {
		a := <-attempts
		if !strings.Contains(a.body, string(probespec.ConditionReady)) {
			t.Errorf("write %d = %s, want the condition", i+1, a.body)
		}
		// A hung write ends at its deadline (the client's clock started
		// before the server's); the upper bound is loose for a loaded machine.
		if i < 2 && (a.took < timeout-100*time.Millisecond || a.took > timeout+5*time.Second) {
			t.Errorf("hung write %d ended after %s, want at its %s deadline", i+1, a.took, timeout)
		}
	}
	testutil.WaitFor(t, "the answered write counted", func() bool {
		return testutil.Metric(t, e.reg, "probelet_readiness_condition_writes_total", map[string]string{"result": "ok"}) == 1
	})
	if got := testutil.Metric(t, e.reg, "probelet_readiness_condition_writes_total", map[string]string{"result": "error"}); got != 2 {
		t.Errorf("failed writes counted %v, want 2", got)
	}
	if got := testutil.Metric(t, e.reg, "probelet_api_request_errors_total", map[string]string{"call": "patch pods/status"}); got != 2 {
		t.Errorf("API errors counted %v, want 2", got)
	}
}

// patchThrough writes the condition through real and reads pods from the
// embedded (fake) client.
type patchThrough struct {
	kube.Client
	real kube.Client
}

func (p patchThrough) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	return p.real.PatchPodStatus(ctx, namespace, name, patch)
}

// TestALostChangeIsWrittenByTheNextResync changes the engine's verdict
// without a result change reaching the writer (a subscriber that fell
// behind loses it): the periodic pass writes it.
func TestALostChangeIsWrittenByTheNextResync(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, gatedPod())
	e.run(t, kubetest.Client(e.client), clk)
	e.waitCondition(t, corev1.ConditionFalse)
	e.status.Set(webStatus(true)) // no PublishResult: the change is lost
	clk.Step(10 * time.Second)
	e.waitCondition(t, corev1.ConditionTrue)
}

// TestRunLeavesNothingRunning stops the writer while its write hangs on
// an API server that never answers (and a client deadline far away): Run
// gives the write its drain time and no more, and once it has returned
// the writer's goroutines and the work queue's timer loop end.
func TestRunLeavesNothingRunning(t *testing.T) {
	hanging := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client hang up
		select {
		case hanging <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	defer srv.Close()
	real, err := kube.NewClient(&rest.Config{Host: srv.URL, Timeout: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, gatedPod())
	e.run(t, patchThrough{Client: kubetest.Client(e.client), real: real}, nil)
	<-hanging
	start := time.Now()
	e.stop()
	// 2 s of drain; the upper bound is loose for a loaded machine.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run returned %s after its context ended, want about its 2 s drain", took)
	}
	testutil.NoGoroutines(t, "github.com/probelet/probelet/kube/readiness.", "k8s.io/client-go/util/workqueue.")
}

// `kubectl annotate --overwrite` of the probes on a running pod changes
// nothing: the condition follows the probes the pod was created with, which
// the engine runs, not the API object's annotation.
func TestConditionFollowsTheProbesThePodWasCreatedWith(t *testing.T) {
	other := gatedPod()
	other.Name, other.UID, other.Annotations = "other", "u3", nil
	e := start(t, gatedPod(), other)
	e.publish(false)
	testutil.WaitFor(t, "the readiness failure", func() bool { c, _ := e.condition(t); return c.Reason == probespec.ReasonReadinessProbeFailed })

	pod, err := e.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{probespec.AnnotationProbes: "{}"}
	if _, err := e.client.CoreV1().Pods("default").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the informer to see the new annotation", func() bool {
		p, err := e.lister.Pods("default").Get("web")
		return err == nil && p.Annotations[probespec.AnnotationProbes] == "{}"
	})
	// The pod's key is queued with the new annotation in the cache, then
	// the other pod's: one worker takes keys in order, so once the other
	// pod is written the annotated one was synced.
	e.publish(false)
	e.status.PublishResult(prober.ResultChange{PodUID: "u3", PodName: "other", PodNamespace: "default", Type: probespec.Readiness})
	testutil.WaitFor(t, "the other pod's condition", func() bool {
		p, err := e.client.CoreV1().Pods("default").Get(context.Background(), "other", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, ok := condition(p)
		return ok && c.Status == corev1.ConditionTrue
	})
	if c, _ := e.condition(t); c.Status != corev1.ConditionFalse || c.Reason != probespec.ReasonReadinessProbeFailed {
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
	e.status.PublishResult(prober.ResultChange{PodUID: "u4", PodName: "unknown", PodNamespace: "default", Type: probespec.Readiness})
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
		if c.Type == probespec.ConditionReady {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// TestARenewedLeaseRewritesTheControllersMarksAtOnce: probelet-controller
// marked the pod while this probelet's Lease was held back; once the
// heartbeat renews again it calls Recheck, and the engine's verdict
// replaces the mark without waiting for the periodic pass (the fake clock
// never moves).
func TestARenewedLeaseRewritesTheControllersMarksAtOnce(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, gatedPod())
	why := "the probe scheduler is 12s behind"
	e.hold.Store(&why)
	e.run(t, kubetest.Client(e.client), clk)
	e.publish(true)
	e.waitCondition(t, corev1.ConditionTrue)
	// The controller's mark, as probelet-controller writes it.
	pod, err := e.client.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range pod.Status.Conditions {
		if c.Type == probespec.ConditionReady {
			pod.Status.Conditions[i] = corev1.PodCondition{Type: c.Type, Status: corev1.ConditionFalse,
				Reason: "ProbeletUnavailable", Message: "probelet on node n1 stopped renewing its Lease"}
		}
	}
	if _, err := e.client.CoreV1().Pods("default").UpdateStatus(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	writes := e.patches.Load()
	e.publish(true) // a result while held: the mark stays
	testutil.WaitFor(t, "the writer to see the mark", func() bool {
		p, _ := e.lister.Pods("default").Get("web")
		return p != nil && !podReady(p)
	})
	e.w.Recheck() // and a pass while held
	if c, _ := e.condition(t); c.Reason != "ProbeletUnavailable" || e.patches.Load() != writes {
		t.Fatalf("while held: %+v after %d writes, want the mark kept", c, e.patches.Load()-writes)
	}
	e.hold.Store(nil)
	e.w.Recheck()
	e.waitCondition(t, corev1.ConditionTrue)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == probespec.ConditionReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
