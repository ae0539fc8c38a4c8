//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/probespec"
)

// namespaces the gated pods spread over.
const namespaces = 50

// probes is a pod's probelet.io/probes annotation, as the webhook writes
// it for a typical web container.
const probes = `{"app":{"livenessProbe":{"tcpSocket":{"port":8080},"periodSeconds":10},` +
	`"readinessProbe":{"httpGet":{"path":"/ready","port":8080},"periodSeconds":5}}}`

// podSet is the gated pods, by node.
type podSet struct {
	mu     sync.Mutex
	uid    map[types.NamespacedName]types.UID
	byNode map[string][]types.NamespacedName
	admin  kubernetes.Interface
}

func namespaceOf(nodeIndex int) string { return fmt.Sprintf("scale-%d", nodeIndex%namespaces) }

// gatedPod is a pod as it reaches the API server through the webhook:
// probelet's gate and annotation, bound to its node.
func gatedPod(n *simNode, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-p%02d", n.name, i), Namespace: namespaceOf(n.index),
			Labels:      map[string]string{"app": "scale", labelNode: n.name, labelZone: n.zone},
			Annotations: map[string]string{probespec.AnnotationProbes: probes}},
		Spec: corev1.PodSpec{NodeName: n.name,
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: probespec.ConditionReady}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/scale/app:1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
	}
}

// createPods creates perNode gated pods on every node and writes their
// status as the kubelet does once they run.
func createPods(ctx context.Context, f *fleet, perNode int) (*podSet, error) {
	ps := &podSet{uid: map[types.NamespacedName]types.UID{}, byNode: map[string][]types.NamespacedName{}, admin: f.admin}
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%d", i)}}
		if _, err := f.admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	err := parallel(ctx, len(f.nodes)*perNode, func(ctx context.Context, i int) error {
		n := f.nodes[i/perNode]
		pod, err := f.admin.CoreV1().Pods(namespaceOf(n.index)).Create(ctx, gatedPod(n, i%perNode), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		ps.mu.Lock()
		ps.uid[key] = pod.UID
		ps.byNode[n.name] = append(ps.byNode[n.name], key)
		ps.mu.Unlock()
		_, err = f.admin.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType,
			kubeletStatus(n, i), metav1.PatchOptions{}, "status")
		return err
	})
	return ps, err
}

// kubeletStatus is the status the kubelet writes for a running pod whose
// gate is not True yet.
func kubeletStatus(n *simNode, i int) []byte {
	now := metav1.Now()
	ready := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now}
	}
	status := corev1.PodStatus{Phase: corev1.PodRunning, HostIP: nodeIP(n.index), PodIP: fmt.Sprintf("10.200.%d.%d", i/256%256, i%256),
		StartTime: &now, QOSClass: corev1.PodQOSBestEffort,
		Conditions: []corev1.PodCondition{ready(corev1.PodReadyToStartContainers, corev1.ConditionTrue),
			ready(corev1.PodInitialized, corev1.ConditionTrue), ready(corev1.ContainersReady, corev1.ConditionTrue),
			ready(corev1.PodScheduled, corev1.ConditionTrue), {Type: corev1.PodReady, Status: corev1.ConditionFalse,
				Reason: "ReadinessGatesNotReady", Message: "corresponding condition of pod readiness gate \"probelet.io/ready\" does not exist.",
				LastTransitionTime: now}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Started: ptrTo(true), RestartCount: 0,
			Image: "registry.invalid/scale/app:1", ImageID: "registry.invalid/scale/app@sha256:" + fmt.Sprintf("%064x", i),
			ContainerID: fmt.Sprintf("containerd://%064x", i),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
	b, _ := json.Marshal(map[string]any{"status": status})
	return b
}

func ptrTo[T any](v T) *T { return &v }

// writeConditions writes every pod's probelet.io/ready True through
// probelet's client, as its readiness writer does.
func (ps *podSet) writeConditions(ctx context.Context, client kube.Client) error {
	var keys []types.NamespacedName
	for _, k := range ps.byNode {
		keys = append(keys, k...)
	}
	return parallel(ctx, len(keys), func(ctx context.Context, i int) error {
		return ps.writeCondition(ctx, client, keys[i])
	})
}

// writeCondition is probelet's readiness writer's patch for a passing
// pod: the condition merged by type, the UID a precondition.
func (ps *podSet) writeCondition(ctx context.Context, client kube.Client, key types.NamespacedName) error {
	body, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": ps.uid[key]},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": probespec.ConditionReady, "status": corev1.ConditionTrue,
			"lastTransitionTime": metav1.NewTime(time.Now().Truncate(time.Second)), "reason": nil, "message": nil}}},
	})
	_, err := client.PatchPodStatus(ctx, key.Namespace, key.Name, body)
	return err
}

// managedPod is a pod of the churn: kubelet probes, in a namespace the
// webhook converts.
func managedPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "churn"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/scale/app:1",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
				PeriodSeconds: 5},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 10}}}}}
}
