// Package pdb tells the kill guard whether a liveness kill would take a
// workload below its PodDisruptionBudget (kubernetes#66230: the kubelet
// restarts without looking), the way the eviction API decides a
// disruption: a budget with disruptions left allows it, and so does one
// whose pod is already unhealthy when the healthy pods meet the budget.
// Where the eviction API refuses a pod with two budgets outright, probelet
// holds the kill if either forbids it.
package pdb

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/prober"
)

// Checker reads PodDisruptionBudgets from an informer and the node's pods
// from the pod watcher's lister.
type Checker struct {
	informer cache.SharedIndexInformer
	budgets  policylisters.PodDisruptionBudgetLister
	pods     listersv1.PodLister
}

// New returns a checker; Run starts its informer.
func New(client kube.Client, pods listersv1.PodLister) (*Checker, error) {
	if client == nil || pods == nil {
		return nil, errors.New("pdb: a client and the pod lister are required")
	}
	inf := cache.NewSharedIndexInformer(client.PodDisruptionBudgets(), &policyv1.PodDisruptionBudget{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return &Checker{informer: inf, budgets: policylisters.NewPodDisruptionBudgetLister(inf.GetIndexer()), pods: pods}, nil
}

// Run runs the informer until ctx ends; it returns once the informer has
// stopped, or kube.StopWait after ctx ended.
func (c *Checker) Run(ctx context.Context) error {
	kube.StartInformer(ctx, c.informer)()
	return nil
}

// Budget says why killing k's container would take a workload below a
// budget, or "" when no budget forbids it (or none is known yet: probelet
// does not hold kills for want of the API server).
func (c *Checker) Budget(k prober.Kill) string {
	if !c.informer.HasSynced() {
		return ""
	}
	pod, err := c.pods.Pods(k.PodNamespace).Get(k.PodName)
	if err != nil || string(pod.UID) != k.PodUID || ignoresBudgets(pod) {
		return ""
	}
	list, err := c.budgets.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return ""
	}
	for _, b := range list {
		if blocks(b, pod) {
			return fmt.Sprintf("would take %s/%s below its PodDisruptionBudget %s (%d disruptions allowed, %d of %d pods healthy)",
				pod.Namespace, pod.Name, b.Name, b.Status.DisruptionsAllowed, b.Status.CurrentHealthy, b.Status.DesiredHealthy)
		}
	}
	return ""
}

// blocks reports whether budget b covers pod and forbids disrupting it,
// in the eviction API's order (pkg/registry/core/pod/storage/eviction.go).
func blocks(b *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if !covers(b, pod) {
		return false
	}
	if !podReady(pod) {
		// An unhealthy pod is not among the healthy ones the budget
		// counts: it may go always (AlwaysAllow), or while the healthy
		// pods meet the budget (IfHealthyBudget, the default).
		if p := b.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
			return false
		}
		if b.Status.CurrentHealthy >= b.Status.DesiredHealthy && b.Status.DesiredHealthy > 0 {
			return false
		}
	}
	// A budget the disruption controller has not caught up with yet
	// allows nothing, as the eviction API answers 429.
	return b.Status.ObservedGeneration < b.Generation || b.Status.DisruptionsAllowed <= 0
}

// covers reports whether b selects pod: an empty selector selects every
// pod of the namespace, a missing one none (policy/v1).
func covers(b *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if b.Namespace != pod.Namespace {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	return err == nil && sel.Matches(labels.Set(pod.Labels))
}

// ignoresBudgets is the eviction API's canIgnorePDB: a pod that is
// finished, pending or being deleted is not protected by a budget.
func ignoresBudgets(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
