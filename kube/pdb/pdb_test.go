package pdb_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/kube/kubetest"
	"github.com/probelet/probelet/kube/pdb"
	"github.com/probelet/probelet/prober"
)

// The checker reads budgets and pods from informers and names the budget
// that holds a kill; a pod it does not know, a pod of another UID, or one
// being deleted is never held.
func TestCheckerBudget(t *testing.T) {
	pod := func(name string, ready, deleting bool) *corev1.Pod {
		s := corev1.ConditionFalse
		if ready {
			s = corev1.ConditionTrue
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": "web"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}}}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web-pdb", Namespace: "default", Generation: 1},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 0, CurrentHealthy: 2, DesiredHealthy: 2}}
	client := fake.NewClientset(pod("web-1", true, false), pod("web-2", true, true), budget)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods()
	lister, synced := pods.Lister(), pods.Informer().HasSynced
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), synced)
	c, err := pdb.New(kubetest.Client(client), lister)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	kill := func(name, uid string) prober.Kill {
		return prober.Kill{PodName: name, PodNamespace: "default", PodUID: uid}
	}
	testutil.WaitFor(t, "the budget to hold web-1's kill", func() bool { return c.Budget(kill("web-1", "uid-web-1")) != "" })
	if got, want := c.Budget(kill("web-1", "uid-web-1")), "would take default/web-1 below its PodDisruptionBudget web-pdb (0 disruptions allowed, 2 of 2 pods healthy)"; got != want {
		t.Errorf("Budget = %q, want %q", got, want)
	}
	for _, tc := range []struct{ name, uid, why string }{
		{"web-1", "uid-old", "another instance of the pod"},
		{"web-2", "uid-web-2", "a pod being deleted"},
		{"web-3", "uid-web-3", "a pod the informer does not know"},
	} {
		if got := c.Budget(kill(tc.name, tc.uid)); got != "" {
			t.Errorf("%s: Budget = %q, want no hold", tc.why, got)
		}
	}
	if _, err := pdb.New(nil, lister); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("New without a client = %v", err)
	}
}
