package kube

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/probelet/probelet/internal/kubeconfig"
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
	// Namespaces lists and watches the cluster's namespaces (their labels
	// grant probe host exceptions).
	Namespaces() cache.ListerWatcher
	// PatchPodStatus applies a strategic merge patch to a pod's status,
	// as probelet's field manager.
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error)
	// CreateEvent creates a core/v1 Event in its namespace.
	CreateEvent(ctx context.Context, ev *corev1.Event) (*corev1.Event, error)
	// PatchEvent applies a strategic merge patch to an Event (a repeat's
	// count and last timestamp).
	PatchEvent(ctx context.Context, namespace, name string, patch []byte) (*corev1.Event, error)
	// GetNode reads a node: the owner of probelet's Lease.
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	// GetLease reads a coordination.k8s.io/v1 Lease.
	GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error)
	// CreateLease creates a Lease in its namespace.
	CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	// UpdateLease replaces a Lease; its resourceVersion makes it fail with
	// a conflict when the Lease changed since it was read.
	UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	// ReviewToken asks the API server who a bearer token is (TokenReview).
	ReviewToken(ctx context.Context, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error)
	// ReviewAccess asks the API server whether a user may do something
	// (SubjectAccessReview).
	ReviewAccess(ctx context.Context, review *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error)
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
	utilruntime.Must(coordinationv1.AddToScheme(s))
	utilruntime.Must(authenticationv1.AddToScheme(s))
	utilruntime.Must(authorizationv1.AddToScheme(s))
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}

// DefaultRequestTimeout bounds every call but a watch when the
// configuration sets no rest.Config.Timeout: a list, a condition write, an
// Event. A watch is long by design; the API server ends it (the reflector
// asks for 5 to 10 minutes) and the HTTP/2 health check finds a dead one.
const DefaultRequestTimeout = kubeconfig.RequestTimeout

// restClient is Client over client-go's REST client, speaking JSON like
// the clientset does by default.
type restClient struct {
	core    rest.Interface // /api/v1
	policy  rest.Interface // /apis/policy/v1
	coord   rest.Interface // /apis/coordination.k8s.io/v1
	authn   rest.Interface // /apis/authentication.k8s.io/v1
	authz   rest.Interface // /apis/authorization.k8s.io/v1
	timeout time.Duration
	m       *Metrics
}

// NewClient returns a Client for cfg. Its API groups share one HTTP
// client and one rate limiter, as a clientset's do. cfg.Timeout (default
// DefaultRequestTimeout) bounds each call but watches: client-go would put
// it on the HTTP client, which cuts every watch at that age, so it is set
// on each request instead. Failed calls are counted in m (nil: a fresh,
// unregistered Metrics).
func NewClient(cfg *rest.Config, m *Metrics) (Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultRequestTimeout
	}
	cfg.Timeout = 0
	if m == nil {
		m = NewMetrics()
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	codecs := serializer.NewCodecFactory(NewScheme()).WithoutConversion()
	group := func(apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
		c := rest.CopyConfig(cfg)
		c.APIPath, c.GroupVersion, c.NegotiatedSerializer = apiPath, &gv, codecs
		rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
		if err != nil {
			return nil, fmt.Errorf("API client for %s: %w", gv, err)
		}
		return rc, nil
	}
	c := &restClient{timeout: timeout, m: m}
	if c.core, err = group("/api", corev1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if c.policy, err = group("/apis", policyv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if c.coord, err = group("/apis", coordinationv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if c.authn, err = group("/apis", authenticationv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	if c.authz, err = group("/apis", authorizationv1.SchemeGroupVersion); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *restClient) NodePods(nodeName string) cache.ListerWatcher {
	return c.listWatch(c.core, "pods", NodePodsSelector(nodeName))
}

func (c *restClient) Namespaces() cache.ListerWatcher {
	return c.listWatch(c.core, "namespaces", fields.Everything())
}

func (c *restClient) PodDisruptionBudgets() cache.ListerWatcher {
	return c.listWatch(c.policy, "poddisruptionbudgets", fields.Everything())
}

// listWatch is cache.NewListWatchFromClient with the list bounded by the
// request timeout and failures counted.
func (c *restClient) listWatch(rc rest.Interface, resource string, sel fields.Selector) cache.ListerWatcher {
	get := func(o metav1.ListOptions) *rest.Request {
		o.FieldSelector = sel.String()
		return rc.Get().Resource(resource).VersionedParams(&o, metav1.ParameterCodec)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := get(o).Timeout(c.timeout).Do(ctx).Get()
			return obj, c.count(ctx, "list "+resource, err)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			w, err := get(o).Watch(ctx)
			return w, c.count(ctx, "watch "+resource, err)
		},
	}
}

func (c *restClient) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := c.core.Patch(types.StrategicMergePatchType).Namespace(namespace).Resource("pods").Name(name).
		SubResource("status").VersionedParams(&metav1.PatchOptions{FieldManager: FieldManager}, metav1.ParameterCodec).
		Body(patch).Timeout(c.timeout).Do(ctx).Into(pod)
	return pod, c.count(ctx, "patch pods/status", err)
}

func (c *restClient) CreateEvent(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := c.core.Post().Namespace(ev.Namespace).Resource("events").Body(ev).Timeout(c.timeout).Do(ctx).Into(out)
	return out, c.count(ctx, "create events", err)
}

func (c *restClient) PatchEvent(ctx context.Context, namespace, name string, patch []byte) (*corev1.Event, error) {
	out := &corev1.Event{}
	err := c.core.Patch(types.StrategicMergePatchType).Namespace(namespace).Resource("events").Name(name).
		Body(patch).Timeout(c.timeout).Do(ctx).Into(out)
	return out, c.count(ctx, "patch events", err)
}

func (c *restClient) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := c.core.Get().Resource("nodes").Name(name).Timeout(c.timeout).Do(ctx).Into(out)
	return out, c.count(ctx, "get nodes", err)
}

func (c *restClient) GetLease(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coord.Get().Namespace(namespace).Resource("leases").Name(name).Timeout(c.timeout).Do(ctx).Into(out)
	return out, c.count(ctx, "get leases", err)
}

func (c *restClient) CreateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coord.Post().Namespace(lease.Namespace).Resource("leases").
		VersionedParams(&metav1.CreateOptions{FieldManager: FieldManager}, metav1.ParameterCodec).
		Body(lease).Timeout(c.timeout).Do(ctx).Into(out)
	return out, c.count(ctx, "create leases", err)
}

func (c *restClient) UpdateLease(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	err := c.coord.Put().Namespace(lease.Namespace).Resource("leases").Name(lease.Name).
		VersionedParams(&metav1.UpdateOptions{FieldManager: FieldManager}, metav1.ParameterCodec).
		Body(lease).Timeout(c.timeout).Do(ctx).Into(out)
	return out, c.count(ctx, "update leases", err)
}

func (c *restClient) ReviewToken(ctx context.Context, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	out := &authenticationv1.TokenReview{}
	err := c.authn.Post().Resource("tokenreviews").Body(review).Timeout(c.timeout).Do(ctx).Into(out)
	return out, c.count(ctx, "create tokenreviews", err)
}

func (c *restClient) ReviewAccess(ctx context.Context, review *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	out := &authorizationv1.SubjectAccessReview{}
	err := c.authz.Post().Resource("subjectaccessreviews").Body(review).Timeout(c.timeout).Do(ctx).Into(out)
	return out, c.count(ctx, "create subjectaccessreviews", err)
}

// count counts a failed call, unless the caller gave up on it.
func (c *restClient) count(ctx context.Context, call string, err error) error {
	if err != nil && ctx.Err() == nil {
		c.m.errors.WithLabelValues(call).Inc()
	}
	return err
}
