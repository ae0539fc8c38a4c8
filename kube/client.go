package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
)

// Client is all probelet asks of the API server. It is narrow on purpose:
// client-go's clientset registers every API group of Kubernetes at start,
// which doubled the agent's resident memory (issue 12) for two resources
// it reads and two it writes. Tests adapt client-go's fake clientset to it
// (kube/kubetest).
type Client interface {
	// NodePods lists and watches the pods bound to nodeName.
	NodePods(nodeName string) cache.ListerWatcher
	// PodDisruptionBudgets lists and watches every namespace's budgets.
	PodDisruptionBudgets() cache.ListerWatcher
	// PatchPodStatus applies a strategic merge patch to a pod's status,
	// as probelet's field manager.
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	// Events is where the event broadcaster writes core/v1 Events.
	Events() record.EventSink
	// Scheme knows the types above, for the event recorder.
	Scheme() *runtime.Scheme
}

// FieldManager names probelet's writes in managedFields.
const FieldManager = "probelet"

// NodePodsSelector selects the pods bound to nodeName.
func NodePodsSelector(nodeName string) fields.Selector {
	return fields.OneTermEqualSelector("spec.nodeName", nodeName)
}

// NewScheme returns a scheme of the types probelet reads and writes.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(policyv1.AddToScheme(s))
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// restClient is Client over client-go's REST client, speaking JSON like
// the clientset does by default.
type restClient struct {
	scheme *runtime.Scheme
	core   rest.Interface // /api/v1
	policy rest.Interface // /apis/policy/v1
}

// NewClient returns a Client for cfg. Its two API groups share one HTTP
// client and one rate limiter, as a clientset's do.
func NewClient(cfg *rest.Config) (Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	scheme := NewScheme()
	codecs := serializer.NewCodecFactory(scheme).WithoutConversion()
	group := func(apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion, c.NegotiatedSerializer = apiPath, &gv, codecs
		rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
		if err != nil {
			return nil, fmt.Errorf("API client for %s: %w", gv, err)
		}
		return rc, nil
	}
	c := &restClient{scheme: scheme}
	if c.core, err = group("/api", corev1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if c.policy, err = group("/apis", policyv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *restClient) NodePods(nodeName string) cache.ListerWatcher {
	return cache.NewListWatchFromClient(c.core, "pods", metav1.NamespaceAll, NodePodsSelector(nodeName))
}

func (c *restClient) PodDisruptionBudgets() cache.ListerWatcher {
	return cache.NewListWatchFromClient(c.policy, "poddisruptionbudgets", metav1.NamespaceAll, fields.Everything())
}

func (c *restClient) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := c.core.Patch(types.StrategicMergePatchType).Namespace(namespace).Resource("pods").Name(name).
		SubResource("status").VersionedParams(&metav1.PatchOptions{FieldManager: FieldManager}, metav1.ParameterCodec).
		Body(patch).Do(ctx).Into(pod)
	return pod, err
}

func (c *restClient) Events() record.EventSink { return eventSink{c.core} }

func (c *restClient) Scheme() *runtime.Scheme { return c.scheme }

// eventSink writes Events into their own namespaces, as client-go's
// EventSinkImpl does. The broadcaster calls it without a context: a write
// is bounded by the REST client's timeout and retried by the broadcaster.
type eventSink struct{ core rest.Interface }

func (s eventSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.core.Post().Namespace(ev.Namespace).Resource("events").Body(ev).Do(context.Background()).Into(out)
	return out, err
}

func (s eventSink) Update(ev *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.core.Put().Namespace(ev.Namespace).Resource("events").Name(ev.Name).Body(ev).Do(context.Background()).Into(out)
	return out, err
}

func (s eventSink) Patch(ev *corev1.Event, patch []byte) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := s.core.Patch(types.StrategicMergePatchType).Namespace(ev.Namespace).Resource("events").Name(ev.Name).
		Body(patch).Do(context.Background()).Into(out)
	return out, err
}
