package podwatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/kube/kubetest"
	"github.com/probelet/probelet/kube/podwatch"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

type sink struct {
	mu   sync.Mutex
	pods map[string]*node.APIPod
	seen map[string]bool
}

func (s *sink) SetAPIPod(_ time.Time, uid string, p *node.APIPod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[uid] = true
	if p == nil {
		delete(s.pods, uid)
		return
	}
	s.pods[uid] = p
}

func (s *sink) get(uid string) (*node.APIPod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[uid]
	return p, ok
}

func pod(name, uid, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("u-" + uid)},
		Spec: corev1.PodSpec{NodeName: nodeName, RestartPolicy: corev1.RestartPolicyNever}}
}

func TestWatcherFeedsTheNodesPods(t *testing.T) {
	client := fake.NewClientset(pod("mine", "1", "n1"), pod("theirs", "2", "n2"))
	s := &sink{pods: map[string]*node.APIPod{}, seen: map[string]bool{}}
	w, err := podwatch.New(kubetest.Client(client), "n1", s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	testutil.WaitFor(t, "this node's pod", func() bool { _, ok := s.get("u-1"); return ok })
	if p, _ := s.get("u-1"); p.Spec.RestartPolicy != corev1.RestartPolicyNever || !p.DeletionTimestamp.IsZero() {
		t.Fatalf("API pod = %+v", p)
	}
	// Deletion requested: the grace and time arrive.
	del := pod("mine", "1", "n1")
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	grace := int64(30)
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, &grace
	if _, err := client.CoreV1().Pods("default").Update(ctx, del, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the deletion request", func() bool { p, _ := s.get("u-1"); return !p.DeletionTimestamp.IsZero() })
	if err := client.CoreV1().Pods("default").Delete(ctx, "mine", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the pod to be gone", func() bool { _, ok := s.get("u-1"); return !ok })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen["u-2"] {
		t.Fatal("another node's pod reached the cache")
	}
}

// The kubelet's probe workers stay while the pod's AllContainersRestarting
// condition is True; the engine learns the condition from APIPod.
func TestAPIPodCarriesAllContainersRestarting(t *testing.T) {
	tests := []struct {
		name       string
		conditions []corev1.PodCondition
		want       bool
	}{
		{"no conditions", nil, false},
		{"True", []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.AllContainersRestarting, Status: corev1.ConditionTrue}}, true},
		{"False", []corev1.PodCondition{{Type: corev1.AllContainersRestarting, Status: corev1.ConditionFalse}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("p", "1", "n1")
			p.Status.Conditions = tc.conditions
			if got := podwatch.APIPod(p).AllContainersRestarting; got != tc.want {
				t.Fatalf("AllContainersRestarting = %v, want %v", got, tc.want)
			}
		})
	}
}

// A namespace an admin labelled probelet.io/allow-probe-host=true lets its
// pods' probes name any host; the grant follows the label both ways, and a
// pod whose namespace is not listed (yet) has a known "no" once the first
// listing arrived.
func TestAPIPodCarriesTheNamespaceProbeHostGrant(t *testing.T) {
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	granted := pod("granted", "1", "n1")
	granted.Namespace = "infra"
	plain := pod("plain", "2", "n1")
	client := fake.NewClientset(granted, plain, ns("default", nil),
		ns("infra", map[string]string{probespec.LabelAllowProbeHost: "true"}))
	s := &sink{pods: map[string]*node.APIPod{}, seen: map[string]bool{}}
	w, err := podwatch.New(kubetest.Client(client), "n1", s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	grant := func(uid string) (allowed, known bool) {
		p, ok := s.get(uid)
		return ok && p.ProbeHostAllowed, ok && p.NamespaceKnown
	}
	testutil.WaitFor(t, "the labelled namespace's grant", func() bool { a, k := grant("u-1"); return a && k })
	testutil.WaitFor(t, "the plain namespace's known refusal", func() bool { a, k := grant("u-2"); return !a && k })

	for _, tc := range []struct {
		value string
		want  bool
	}{{"false", false}, {"true", true}, {"yes", false}} {
		upd := ns("infra", map[string]string{probespec.LabelAllowProbeHost: tc.value})
		if _, err := client.CoreV1().Namespaces().Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, "the grant for label value "+tc.value, func() bool { a, k := grant("u-1"); return a == tc.want && k })
	}
	if a, _ := grant("u-2"); a {
		t.Errorf("a relabelled namespace granted another namespace's pod")
	}
}
