// Package kubetest adapts a client-go clientset — in tests, the fake one —
// to probelet's narrow kube.Client. Only tests import it: the agent's
// binary must not link the clientset (kube.Client says why).
package kubetest

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/kube"
)

// Client returns cs as a kube.Client.
func Client(cs kubernetes.Interface) kube.Client { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) NodePods(nodeName string) cache.ListerWatcher {
	sel := kube.NodePodsSelector(nodeName).String()
	pods := c.cs.CoreV1().Pods(metav1.NamespaceAll)
	// The fake clientset declares it cannot stream a watch list; the
	// wrapper tells the reflector, as client-go's own informers do.
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return pods.Watch(ctx, o)
		},
	}, c.cs)
}

func (c clientset) Namespaces() cache.ListerWatcher {
	namespaces := c.cs.CoreV1().Namespaces()
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return namespaces.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return namespaces.Watch(ctx, o)
		},
	}, c.cs)
}

func (c clientset) PodDisruptionBudgets() cache.ListerWatcher {
	budgets := c.cs.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll)
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return budgets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return budgets.Watch(ctx, o)
		},
	}, c.cs)
}

func (c clientset) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	return c.cs.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: kube.FieldManager}, "status")
}

func (c clientset) CreateEvent(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	return c.cs.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
}

func (c clientset) PatchEvent(ctx context.Context, namespace, name string, patch []byte) (*corev1.Event, error) {
	return c.cs.CoreV1().Events(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
}

func (c clientset) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (c clientset) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	return c.cs.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c clientset) CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return c.cs.CoordinationV1().Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{FieldManager: kube.FieldManager})
}

func (c clientset) UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return c.cs.CoordinationV1().Leases(lease.Namespace).Update(ctx, lease, metav1.UpdateOptions{FieldManager: kube.FieldManager})
}

func (c clientset) ReviewToken(ctx context.Context, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	return c.cs.AuthenticationV1().TokenReviews().Create(ctx, review, metav1.CreateOptions{})
}

func (c clientset) ReviewAccess(ctx context.Context, review *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	return c.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
}
