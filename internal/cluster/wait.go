package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const pollEvery = 50 * time.Millisecond

// WaitForPod polls the pod until done returns true, and returns the pod it
// accepted. It fails when ctx ends first, with the last state it saw.
// A pod that does not exist yet is polled on; one done rejects is passed
// again on the next poll.
func (c *Cluster) WaitForPod(ctx context.Context, namespace, name string, done func(*corev1.Pod) bool) (*corev1.Pod, error) {
	var last *corev1.Pod
	var lastErr error
	for {
		pod, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			last, lastErr = pod, nil
			if done(pod) {
				return pod, nil
			}
		case apierrors.IsNotFound(err):
			last, lastErr = nil, err
		default:
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("cluster: waiting for pod %s/%s: %w; last seen: %s", namespace, name, ctx.Err(), describe(last, lastErr))
		case <-time.After(pollEvery):
		}
	}
}

// WaitForPodGone polls until the pod no longer exists (the kubelet confirmed
// a deletion, or it was never there).
func (c *Cluster) WaitForPodGone(ctx context.Context, namespace, name string) error {
	for {
		pod, err := c.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: pod %s/%s still there: %w; last seen: %s", namespace, name, ctx.Err(), describe(pod, err))
		case <-time.After(pollEvery):
		}
	}
}

// PodCondition returns the status of the pod's condition of type t, or ""
// when the pod has no such condition.
func PodCondition(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// describe is a one-line summary of a pod for error messages.
func describe(pod *corev1.Pod, err error) string {
	if pod == nil {
		if err != nil {
			return err.Error()
		}
		return "nothing"
	}
	s := fmt.Sprintf("phase %s", pod.Status.Phase)
	for _, c := range pod.Status.Conditions {
		s += fmt.Sprintf(", %s=%s", c.Type, c.Status)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			s += fmt.Sprintf(", container %s waiting (%s: %s)", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			s += fmt.Sprintf(", container %s terminated (%s, exit %d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
	}
	if err != nil {
		s += "; then: " + err.Error()
	}
	return s
}
