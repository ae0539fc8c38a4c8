package pdb

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBlocks(t *testing.T) {
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	always := policyv1.AlwaysAllow
	budget := func(sel *metav1.LabelSelector, allowed, healthy, desired int32, policy *policyv1.UnhealthyPodEvictionPolicyType) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Generation: 1},
			Spec:   policyv1.PodDisruptionBudgetSpec{Selector: sel, UnhealthyPodEvictionPolicy: policy},
			Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: desired}}
	}
	pod := func(ready bool) *corev1.Pod {
		s := corev1.ConditionFalse
		if ready {
			s = corev1.ConditionTrue
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Labels: map[string]string{"app": "web"}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}}}
	}
	tests := []struct {
		name string
		b    *policyv1.PodDisruptionBudget
		pod  *corev1.Pod
		want bool
	}{
		{"disruptions left", budget(web, 1, 3, 2, nil), pod(true), false},
		{"none left, ready pod", budget(web, 0, 2, 2, nil), pod(true), true},
		{"none left, unready pod, healthy meet the budget", budget(web, 0, 2, 2, nil), pod(false), false},
		{"none left, unready pod, below the budget", budget(web, 0, 1, 2, nil), pod(false), true},
		{"none left, unready pod, AlwaysAllow", budget(web, 0, 1, 2, &always), pod(false), false},
		{"another workload's budget", budget(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, 0, 1, 1, nil), pod(true), false},
		{"an empty selector selects the whole namespace", budget(&metav1.LabelSelector{}, 0, 1, 1, nil), pod(true), true},
		{"a missing selector selects nothing", budget(nil, 0, 1, 1, nil), pod(true), false},
		{"none left, unready pod, a budget of zero", budget(web, 0, 0, 0, nil), pod(false), true},
		{"a budget not yet observed", func() *policyv1.PodDisruptionBudget {
			b := budget(web, 1, 3, 2, nil)
			b.Generation = 2
			return b
		}(), pod(true), true},
		{"another namespace's budget", func() *policyv1.PodDisruptionBudget {
			b := budget(web, 0, 1, 1, nil)
			b.Namespace = "other"
			return b
		}(), pod(true), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := blocks(tc.b, tc.pod); got != tc.want {
				t.Fatalf("blocks = %v, want %v", got, tc.want)
			}
		})
	}
}
