// Package slim keeps, of the objects probelet-controller caches
// cluster-wide, only the fields its parts read: the informers' transform.
// A pod's environment, volumes, images and most of its metadata, or a
// node's image list, would otherwise be held for every pod and node of
// the cluster (and a tenant can make its pods' annotations large).
//
// What is read, and so kept:
//   - the monitor (controller/monitor, controller/marking): a pod's name,
//     namespace, UID, node, readiness gates, deletion, phase and
//     probelet.io/ready condition (not its message); a node's name, labels
//     and Ready condition. A cluster's pods are the controller's memory:
//     the kubelet's five conditions, with their messages, were the
//     largest part of a slimmed pod (hack/bench/scale);
//   - the probe-state API (controller/probestate): a pod's name,
//     namespace, UID, labels, creation time, node and phase; a node's
//     addresses (its InternalIP reaches its probelet);
//   - the webhook's report (controller/webhook): a pod's creation time,
//     labels, probelet's annotations, and each container's name, restart
//     policy, ports and probes (what the conversion reads), and the
//     managed fields of a pod labelled managed (when the label came).
package slim

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/probespec"
)

// Transform is a cache.TransformFunc: pods and nodes slimmed in place,
// everything else (namespaces, Leases, tombstones) as it is.
func Transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		Pod(o)
	case *corev1.Node:
		Node(o)
	}
	return obj, nil
}

var _ cache.TransformFunc = Transform

// Pod keeps what the controller reads of p.
func Pod(p *corev1.Pod) {
	// A pod labelled managed itself keeps its managed fields: they say
	// when the label came.
	p.ObjectMeta = meta(p.ObjectMeta, p.Labels[probespec.LabelProbes] == probespec.LabelManaged)
	p.Spec = corev1.PodSpec{
		NodeName:       p.Spec.NodeName,
		ReadinessGates: p.Spec.ReadinessGates,
		InitContainers: containers(p.Spec.InitContainers),
		Containers:     containers(p.Spec.Containers),
	}
	status := corev1.PodStatus{Phase: p.Status.Phase}
	for _, c := range p.Status.Conditions {
		if c.Type == probespec.ConditionReady {
			c.Message = ""
			status.Conditions = []corev1.PodCondition{c}
		}
	}
	p.Status = status
}

// Node keeps what the monitor and the probe-state API read of n.
func Node(n *corev1.Node) {
	n.ObjectMeta = meta(n.ObjectMeta, false)
	n.Spec = corev1.NodeSpec{}
	status := corev1.NodeStatus{Addresses: n.Status.Addresses}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	n.Status = status
}

// meta keeps an object's identity, version, times and labels, and of its
// annotations probelet's own; managed fields only if keepFields.
func meta(m metav1.ObjectMeta, keepFields bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp, Labels: m.Labels,
	}
	for k, v := range m.Annotations {
		if strings.HasPrefix(k, probespec.Prefix) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	if keepFields {
		out.ManagedFields = m.ManagedFields
	}
	return out
}

// containers keeps what the probe conversion reads of each container.
func containers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy, Ports: c.Ports,
			LivenessProbe: c.LivenessProbe, ReadinessProbe: c.ReadinessProbe, StartupProbe: c.StartupProbe}
	}
	return out
}
