// Package marking is what probelet-controller writes on a pod of a node
// whose probelet is silent: the probelet.io/ready condition False, with a
// reason that says why, never True. Pure functions; the controller's
// workers call the API.
package marking

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probelet/probelet/probespec"
)

// Gated reports whether the pod lists probelet's readiness gate.
func Gated(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == probespec.ConditionReady {
			return true
		}
	}
	return false
}

// Needs reports whether pod should be marked False with reason: a gated,
// bound pod that is not finished, and whose condition is not already
// False with that reason. A pod the controller marked is not marked again
// (a restart or a new leader writes nothing twice); a pod probelet already
// holds False for a probe reason is marked anyway, since the reason is
// what a user reads.
func Needs(pod *corev1.Pod, reason string) bool {
	if !Gated(pod) || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == probespec.ConditionReady {
			return c.Status != corev1.ConditionFalse || c.Reason != reason
		}
	}
	return true
}

// Message says why, naming the node and, for an unavailable probelet, its
// last renewal as the Lease says (the node's clock).
func Message(reason, node string, lastRenew time.Time) string {
	if reason == probespec.ReasonProbeletNotRunning || lastRenew.IsZero() {
		return fmt.Sprintf("no probelet has run on node %s: nothing checks this pod's probes", node)
	}
	return fmt.Sprintf("probelet on node %s stopped renewing its Lease (last renewal %s): nothing checks this pod's probes",
		node, lastRenew.UTC().Format(time.RFC3339))
}

// Patch is the strategic merge patch of pods/status that marks pod: the
// condition merges by type, the kubelet's own stay; the UID is a
// precondition (a pod recreated under the same name is not touched). The
// transition time moves only when the status changes, as the kubelet's.
func Patch(pod *corev1.Pod, reason, message string, now time.Time) ([]byte, error) {
	transition := metav1.NewTime(now.Truncate(time.Second))
	for _, c := range pod.Status.Conditions {
		if c.Type == probespec.ConditionReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			transition = c.LastTransitionTime
		}
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pod.UID},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": probespec.ConditionReady, "status": corev1.ConditionFalse, "lastTransitionTime": transition,
			"reason": reason, "message": message,
		}}},
	})
}
