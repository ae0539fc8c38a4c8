package marking_test

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probelet/probelet/controller/marking"
	"github.com/probelet/probelet/probespec"
)

func gatedPod(conds ...corev1.PodCondition) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{NodeName: "a",
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: probespec.ConditionReady}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conds},
	}
}

func TestNeeds(t *testing.T) {
	now := metav1.Now()
	ready := corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionTrue}
	marked := corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionFalse, Reason: probespec.ReasonProbeletUnavailable}
	probeFalse := corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionFalse, Reason: "ReadinessProbeFailed"}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"ready", gatedPod(ready), true},
		{"no condition yet", gatedPod(), true},
		{"already marked", gatedPod(marked), false},
		{"held False by probelet for a probe", gatedPod(probeFalse), true},
		{"not gated", func() *corev1.Pod { p := gatedPod(ready); p.Spec.ReadinessGates = nil; return p }(), false},
		{"deleting", func() *corev1.Pod { p := gatedPod(ready); p.DeletionTimestamp = &now; return p }(), false},
		{"finished", func() *corev1.Pod { p := gatedPod(ready); p.Status.Phase = corev1.PodSucceeded; return p }(), false},
		{"unbound", func() *corev1.Pod { p := gatedPod(ready); p.Spec.NodeName = ""; return p }(), false},
	} {
		if got := marking.Needs(tc.pod, probespec.ReasonProbeletUnavailable); got != tc.want {
			t.Errorf("%s: Needs = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !marking.Needs(gatedPod(marked), probespec.ReasonProbeletNotRunning) {
		t.Error("a pod marked for another reason is marked again with the right one")
	}
}

func TestPatchWritesFalseAndKeepsAFalseTransitionTime(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 500, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour).Truncate(time.Second))
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want metav1.Time
	}{
		{"from True", gatedPod(corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionTrue, LastTransitionTime: earlier}),
			metav1.NewTime(now.Truncate(time.Second))},
		{"already False", gatedPod(corev1.PodCondition{Type: probespec.ConditionReady, Status: corev1.ConditionFalse, LastTransitionTime: earlier}),
			earlier},
	} {
		msg := marking.Message(probespec.ReasonProbeletUnavailable, "a", now.Add(-time.Minute))
		b, err := marking.Patch(tc.pod, probespec.ReasonProbeletUnavailable, msg, now)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
			Status   corev1.PodStatus  `json:"status"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		c := got.Status.Conditions
		if got.Metadata.UID != "u1" || len(c) != 1 || c[0].Type != probespec.ConditionReady || c[0].Status != corev1.ConditionFalse ||
			c[0].Reason != probespec.ReasonProbeletUnavailable || c[0].Message != msg || !c[0].LastTransitionTime.Equal(&tc.want) {
			t.Errorf("%s: patch %s", tc.name, b)
		}
	}
}

func TestMessageNamesTheNodeAndTheLastRenewal(t *testing.T) {
	renew := time.Date(2026, 5, 1, 11, 59, 0, 0, time.UTC)
	if got, want := marking.Message(probespec.ReasonProbeletUnavailable, "a", renew),
		"probelet on node a stopped renewing its Lease (last renewal 2026-05-01T11:59:00Z): nothing checks this pod's probes"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if got, want := marking.Message(probespec.ReasonProbeletNotRunning, "b", time.Time{}),
		"no probelet has run on node b: nothing checks this pod's probes"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
